// quire: the desktop application.
//
//   quire [PROJECT.quire]                      open a project
//   quire --new INPUT... --project P.quire     create a project from scans and start transcribing
//   quire --screenshot FILE.png [--project P] [--page N] [--theme light|dark] [--show find:WORDS|history|reread|pages|regions]
//                                              save a picture of the main window and quit
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QLibraryInfo>
#include <QListView>
#include <QLocale>
#include <QMenu>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>
#include <QTranslator>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "find_panel.h"
#include "main_window.h"
#include "page_history_dialog.h"
#include "page_list_model.h"
#include "reread_dialog.h"
#include "quire/store/page_history.h"
#include "page_editor.h"
#include "quire/core/process_tuning.h"
#include "settings.h"

using quire::ui::MainWindow;

namespace {

void applyTheme(const QString& theme) {
    if (theme == QLatin1String("system")) return;
    QApplication::setStyle(QStyleFactory::create("Fusion"));
    if (theme == QLatin1String("light")) {
        QApplication::setPalette(QApplication::style()->standardPalette());
        return;
    }
    // Qt 6.4 has no colour-scheme hint: a Fusion dark palette.
    QPalette p;
    const QColor window(45, 45, 48), base(30, 30, 32), text(225, 225, 225), highlight(64, 128, 210);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, QColor(110, 170, 240));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Dark, QColor(25, 25, 27));
    p.setColor(QPalette::Mid, QColor(80, 80, 85));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(130, 130, 130));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(130, 130, 130));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(130, 130, 130));
    QApplication::setPalette(p);
}

void installTranslators(QApplication& app, const QString& choice) {
    const QLocale locale = choice == QLatin1String("system") ? QLocale::system() : QLocale(choice);
    auto* quire = new QTranslator(&app);
    // A language Quire has no translation for gets the English text, with English plural forms.
    if (quire->load(locale, "quire", "_", ":/i18n") || quire->load("quire_en", ":/i18n")) app.installTranslator(quire);
    auto* qt = new QTranslator(&app);
    if (qt->load(locale, "qtbase", "_", QLibraryInfo::path(QLibraryInfo::TranslationsPath))) app.installTranslator(qt);
}

}  // namespace

int main(int argc, char** argv) {
    quire::runTesseractSingleThreaded(argv);
    quire::tuneHeapForLargeBuffers();
    QApplication app(argc, argv);
    QApplication::setApplicationName("Quire");
    QApplication::setOrganizationName("Quire");
    QApplication::setApplicationVersion(QUIRE_VERSION_STRING);
    QApplication::setDesktopFileName("org.quire.Quire");
    QApplication::setWindowIcon(QIcon(":/icons/quire.svg"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::translate("main", "Scanned volumes to proofread, exportable text"));
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption projectOpt("project", QApplication::translate("main", "Project file to open or create."), "file");
    QCommandLineOption newOpt("new", QApplication::translate("main", "Create the project from the given scans."));
    QCommandLineOption startOpt("start", QApplication::translate("main", "Start (or resume) transcription at once."));
    QCommandLineOption pageOpt("page", QApplication::translate("main", "Page to show (1-based)."), "n");
    QCommandLineOption shotOpt("screenshot", QApplication::translate("main", "Save a screenshot of the window and quit."), "png");
    QCommandLineOption themeOpt("theme", QApplication::translate("main", "light, dark or system (overrides the setting)."), "theme");
    QCommandLineOption langOpt("ui-language", QApplication::translate("main", "Interface language, e.g. zh_CN."), "lang");
    QCommandLineOption showOpt("show", QApplication::translate("main", "With --screenshot: find:WORDS, history, reread, pages or regions (the view to capture)."), "view");
    QCommandLineOption typeOpt("type-into-editor", QApplication::translate("main", "Type this text into the editor (tests)."), "text");
    parser.addOptions({projectOpt, newOpt, startOpt, pageOpt, shotOpt, showOpt, themeOpt, langOpt, typeOpt});
    parser.addPositionalArgument("inputs", QApplication::translate("main", "A project, or scans with --new."));
    parser.process(app);

    quire::ui::Settings settings;
    applyTheme(parser.isSet(themeOpt) ? parser.value(themeOpt) : settings.theme());
    installTranslators(app, parser.isSet(langOpt) ? parser.value(langOpt) : settings.uiLanguage());

    MainWindow window;
    window.resize(1400, 900);
    window.show();

    QString project = parser.value(projectOpt);
    const QStringList positional = parser.positionalArguments();
    if (parser.isSet(newOpt)) {
        if (project.isEmpty() || positional.isEmpty()) {
            std::fprintf(stderr, "quire: --new needs scans and --project P.quire\n");
            return 2;
        }
        if (!window.newProject(positional, project, true)) {
            std::fprintf(stderr, "quire: %s\n", qPrintable(window.lastError()));
            return 2;
        }
    } else {
        if (project.isEmpty() && !positional.isEmpty()) project = positional.first();
        if (!project.isEmpty() && !window.openProject(project)) {
            std::fprintf(stderr, "quire: %s\n", qPrintable(window.lastError()));
            if (parser.isSet(shotOpt)) return 2;
        }
        if (parser.isSet(startOpt)) window.startRun();
    }
    if (parser.isSet(pageOpt)) window.goToRow(parser.value(pageOpt).toInt() - 1);

    if (parser.isSet(typeOpt)) {
        // Types into the editor once the page is on screen, and says so on stdout once it is saved.
        const QString text = parser.value(typeOpt);
        QObject::connect(&window, &MainWindow::correctionSaved, &app, [] {
            std::printf("typed\n");
            std::fflush(stdout);
        });
        QTimer::singleShot(500, &window, [&window, text] {
            window.editor()->setFocus();
            window.editor()->moveCursor(QTextCursor::End);
            window.editor()->insertPlainText(text);
        });
    }
    if (parser.isSet(shotOpt)) {
        const QString file = parser.value(shotOpt), view = parser.value(showOpt);
        auto shoot = [&window, file, view] {
            QWidget* shown = &window;  // a dialog is captured on its own
            if (view.startsWith("find:")) {
                window.showFind();
                window.findPanel()->setQuery(view.mid(5), quire::SearchMode::WholeWord, false);
                window.findPanel()->findAll();
                window.findPanel()->activateHit(0);
            } else if (view == "history" && window.store() && window.pageModel()->page(window.currentRow())) {
                const auto* page = window.pageModel()->page(window.currentRow());
                if (auto versions = quire::pageVersions(*window.store(), page->id)) {
                    auto* dialog = new quire::ui::PageHistoryDialog(std::move(*versions), page->sequence, &window);
                    dialog->selectVersion(0);  // the oldest reading, compared with the text now
                    shown = dialog;
                }
            } else if (view == "regions") {
                if (auto* mode = window.findChild<QAction*>("regionModeAction")) mode->setChecked(true);
            } else if (view == "reread") {
                shown = new quire::ui::RereadDialog(3, 1, "ppocr", "eng+lat", &window);
            } else if (view == "pages") {
                window.pageList()->selectionModel()->select(
                    QItemSelection(window.pageList()->model()->index(1, 0), window.pageList()->model()->index(2, 0)),
                    QItemSelectionModel::ClearAndSelect);
                auto* menu = new QMenu(&window);
                menu->addActions(window.pageList()->actions());
                shown = menu;
            }
            if (shown != &window) shown->show();
            QApplication::processEvents();
            shown->grab().save(file);
            QApplication::quit();
        };
        auto* timeout = new QTimer(&window);
        timeout->setSingleShot(true);
        QObject::connect(timeout, &QTimer::timeout, &window, shoot);
        timeout->start(15000);
        if (window.pageImageShown() || !window.store()) QTimer::singleShot(300, &window, shoot);
        else QObject::connect(&window, &MainWindow::pageShown, &window, [shoot](int) { QTimer::singleShot(300, shoot); });
    }
    return app.exec();
}
