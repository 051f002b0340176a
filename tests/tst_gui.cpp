// The archivist's day in the GUI, offscreen: create a project from the sample, transcribe it,
// jump to a flagged page, correct a word, reopen, export. Plus bad input and a killed GUI.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QAction>
#include <QCheckBox>
#include <QDialog>
#include <QDockWidget>
#include <QRegularExpression>
#include <QGraphicsRectItem>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenu>
#include <QListWidget>
#include <QMimeData>
#include <QTextBlock>
#include <QTextLayout>
#include <QTimer>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QProcess>
#include <QRadioButton>
#include <QComboBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include <quazip.h>
#include <quazipfile.h>

#include "find_panel.h"
#include "language_picker.h"
#include "settings_dialog.h"
#include "page_arranger.h"
#include "page_history_dialog.h"
#include "reread_dialog.h"
#include "main_window.h"
#include "quire/pipeline/transcriber.h"
#include "page_editor.h"
#include "page_list_model.h"
#include "page_view.h"
#include "quire/store/page_regions.h"
#include "region_layer.h"
#include "palette_colors.h"
#include "settings.h"
#include "test_util.h"

using namespace quire;
using namespace quire::ui;
using namespace quire::test;

namespace {
QString docxText(const QString& file) {
    QuaZip zip(file);
    if (!zip.open(QuaZip::mdUnzip) || !zip.setCurrentFile("word/document.xml")) return {};
    QuaZipFile f(&zip);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
}
}  // namespace

class TestGui : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_project;

    // A project of `pages` queued pages (one multi-page TIFF of small text pages); empty on failure.
    QString queuedProject(const QString& name, int pages) {
        const QString tif = m_dir.filePath(name + ".tif");
        writeTiffVolume(tif, pages, [](int) { return std::vector<std::string>{"a page"}; }, 400, 560, 1.0);
        const QString project = m_dir.filePath(name + ".quire");
        auto store = ProjectStore::open(project.toStdString());
        if (!store) return {};
        TranscribeParams params;
        params.inputs = {tif.toStdString()};
        return registerInputs(**store, params) ? project : QString();
    }

    // A project of pages already read: each page a list of lines, words at confidence 95 unless
    // written "word@30". Empty on failure.
    QString readProject(const QString& name, const std::vector<std::vector<std::string>>& pageLines) {
        const QString project = queuedProject(name, int(pageLines.size()));
        if (project.isEmpty()) return {};
        auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::OpenExisting);
        if (!store) return {};
        auto pages = *(*store)->pages();
        for (size_t i = 0; i < pages.size(); ++i) {
            PageOutcome o;
            o.text.width = 400, o.text.height = 560, o.text.engine = "test";
            int y = 20;
            for (const auto& line : pageLines[i]) {
                Line l;
                int x = 10;
                std::istringstream words(line);
                for (std::string w; words >> w; x += int(w.size()) * 12 + 8) {
                    float conf = 95;
                    if (const size_t at = w.find('@'); at != std::string::npos) conf = std::stof(w.substr(at + 1)), w.resize(at);
                    l.words.push_back({w, {x, y, int(w.size()) * 12, 20}, conf});
                }
                o.text.lines.push_back(l);
                y += 30;
            }
            o.region = {0, 0, 400, 560};
            if (!(*store)->saveResult(pages[i].id, {o})) return {};
        }
        return project;
    }

private slots:
    void initTestCase() {
        Settings s;
        s.setFlagBelow(96);  // flag the sample's weaker pages so there is proofreading to do
        s.setThreads(2);
        s.setLanguages("eng");
        m_project = m_dir.filePath("sample.quire");
    }

    void archivistsDay() {
        QString corrected;
        int flaggedRow = -1;
        {
            MainWindow w;
            w.resize(1300, 850);
            w.show();
            QAbstractItemModelTester tester(w.pageModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QAbstractItemModelTester proxyTester(w.pageList()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
            QSignalSpy finished(&w, &MainWindow::runFinished);
            QVERIFY(w.newProject({samplePdf()}, m_project, true));
            QVERIFY(w.isRunning());
            // While it runs: the page being read says so, the progress bar shows, the log names the engine.
            auto* progressBar = w.findChild<QProgressBar*>();
            QVERIFY(progressBar && progressBar->isVisible());
            auto anyRunning = [&] {
                for (int r = 0; r < w.pageModel()->rowCount(); ++r)
                    if (w.pageModel()->data(w.pageModel()->index(r), PageListModel::StatusRole).toString() == "running") return true;
                return false;
            };
            QTRY_VERIFY_WITH_TIMEOUT(anyRunning(), 60000);
            auto* logView = w.findChild<QPlainTextEdit*>("log");
            QVERIFY(logView && logView->toPlainText().contains("Transcription started (tesseract, languages eng)"));
            QVERIFY(finished.wait(300000));
            QVERIFY(!anyRunning());
            QVERIFY(!progressBar->isVisible());
            QCOMPARE(finished.first().first().toBool(), true);
            qInfo("longest GUI stall during the sample run: %d ms", w.longestStallMs());
            QVERIFY(w.pageModel()->rowCount() >= 8);
            auto counts = w.store()->counts();
            QCOMPARE(counts->done, counts->pages);
            QVERIFY2(counts->flagged > 0, "no flagged page to proofread");

            // Ctrl+, opens the settings on every desktop (not only where Qt knows a Preferences key).
            bool settingsKey = false;
            for (QAction* a : w.findChildren<QAction*>())
                if (a->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::Key_Comma))) settingsKey = true;
            QVERIFY(settingsKey);

            // F8: the first flagged page.
            w.goToRow(0);
            QTest::keyClick(&w, Qt::Key_F8);
            flaggedRow = w.currentRow();
            const PageRecord* page = w.pageModel()->page(flaggedRow);
            QVERIFY(page && page->flagged);
            // Why it is flagged, above the text.
            auto* flagNote = w.findChild<QLabel*>("flagNote");
            QVERIFY(flagNote && flagNote->isVisible());
            QVERIFY2(flagNote->text().startsWith("Flagged for proofreading: ") && flagNote->text().contains("confidence"),
                     qPrintable(flagNote->text()));
            QTRY_VERIFY_WITH_TIMEOUT(w.pageImageShown(), 30000);

            // Type a word at the end of the page; the correction is in the database within a second.
            QSignalSpy saved(&w, &MainWindow::correctionSaved);
            w.editor()->setFocus();
            w.editor()->moveCursor(QTextCursor::End);
            QTest::keyClicks(w.editor(), " Quiremark");
            QVERIFY2(w.editor()->toPlainText().endsWith("Quiremark"), qPrintable(w.editor()->toPlainText().right(80)));
            QVERIFY2(saved.wait(PageEditor::kSaveDelayMs + 1500), qPrintable(w.lastError()));
            corrected = w.editor()->toPlainText();
            auto c = w.store()->latestCorrection(page->id);
            QVERIFY(c && c->has_value());
            QCOMPARE(QString::fromStdString((*c)->text), corrected);
            QVERIFY(corrected.endsWith("Quiremark"));

            // Clicking into the text highlights a box on the scan, and the other way round.
            QTextCursor cur = w.editor()->textCursor();
            cur.setPosition(1);
            w.editor()->setTextCursor(cur);
            QVERIFY(w.pageView()->highlightedWord() >= 0);

            // Proofread marks the page and moves on.
            QTest::keyClick(&w, Qt::Key_Return, Qt::ControlModifier);
            QVERIFY(w.store()->page(page->id)->proofread);
            w.goToRow(flaggedRow);
            w.pageView()->setZoom(0.8);
            w.close();
        }
        {
            MainWindow w;
            w.show();
            QVERIFY(w.openProject(m_project));
            QCOMPARE(w.currentRow(), flaggedRow);  // the page is restored
            QCOMPARE(w.editor()->toPlainText(), corrected);
            QTRY_VERIFY_WITH_TIMEOUT(w.pageImageShown(), 30000);
            QTRY_VERIFY(std::abs(w.pageView()->zoom() - 0.8) < 0.01);  // and the zoom
            QVERIFY(!w.resumeOffered());  // the run had finished
            const QString out = m_dir.filePath("export");
            QVERIFY(w.exportBook(out, {"docx", "md"}));
            QVERIFY2(docxText(out + "/book.docx").contains("Quiremark"), "the correction is not in the DOCX");
            QVERIFY(QString::fromStdString(readFile(out + "/book.md")).contains("Quiremark"));
            QVERIFY(!QString::fromStdString(readFile(out + "/book.md")).contains("\\[scan 1\\]"));
            // With page markers: every page of the sample cited where it begins.
            QVERIFY(w.exportBook(out, {"md"}, true));
            const QString marked = QString::fromStdString(readFile(out + "/book.md"));
            QVERIFY2(marked.count(QRegularExpression("\\\\\\[(p\\.|scan) [0-9ivxlc]+\\\\\\]")) >= w.pageModel()->rowCount(), qPrintable(marked.left(800)));
            w.close();
        }
    }

    void badInputLeavesTheOpenProjectAlone() {
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(m_project));
        const int pages = w.pageModel()->rowCount();
        const QString corrupt = m_dir.filePath("corrupt.pdf");
        writeFile(corrupt, "%PDF-1.7\n1 0 obj << /Type /Catalog");
        QVERIFY(!w.newProject({corrupt}, m_dir.filePath("new.quire")));
        QVERIFY2(w.lastError().contains("corrupt.pdf"), qPrintable(w.lastError()));
        QVERIFY(!QFileInfo::exists(m_dir.filePath("new.quire")));
        QVERIFY(QDir(m_dir.path()).mkpath("empty-folder"));
        QVERIFY(!w.newProject({m_dir.filePath("empty-folder")}, m_dir.filePath("new2.quire")));
        QVERIFY(w.lastError().contains("no page images"));
        // A project from a newer Quire is refused with a message.
        const QString newer = m_dir.filePath("newer.quire");
        QVERIFY(QFile::copy(m_project, newer));
        QCOMPARE(runProgram("sqlite3", {newer, "PRAGMA user_version=99"}).exitCode, 0);
        QVERIFY(!w.openProject(newer));
        QVERIFY(w.lastError().contains("newer version of Quire"));
        QCOMPARE(w.projectPath(), m_project);
        QCOMPARE(w.pageModel()->rowCount(), pages);
    }

    // English spelling accepts British and American forms; a word broken at a line end is checked
    // whole ("possess-" / "ing" is not underlined, "possess-" / "ingx" is).
    void spellingKnowsBothEnglishesAndLineEndBreaks() {
        PageEditor editor;
        editor.setSpellLanguage("eng");
        if (!editor.spellCheckAvailable()) QSKIP("no English hunspell dictionary installed");
        QVERIFY(!editor.isMisspelled("colored"));
        if (QFileInfo::exists("/usr/share/hunspell/en_GB.dic")) QVERIFY(!editor.isMisspelled("coloured"));
        QVERIFY(editor.isMisspelled("colouredx"));
        auto underlined = [&](int block) {
            for (const auto& range : editor.document()->findBlockByNumber(block).layout()->formats())
                if (range.format.underlineStyle() == QTextCharFormat::SpellCheckUnderline) return true;
            return false;
        };
        editor.setPage(1, "they possess-\ning the books", PageText{}, 0);
        QVERIFY(!underlined(0) && !underlined(1));
        editor.setPage(2, "they possess-\ningx the books", PageText{}, 0);
        QVERIFY(underlined(0) && underlined(1));
        // F7's walk: the next word no dictionary knows, wrapping round to the start.
        editor.setPage(3, "the ledgr of the parish regster", PageText{}, 0);
        QVERIFY(editor.selectNextDoubtfulWord());
        QCOMPARE(editor.textCursor().selectedText(), QString("ledgr"));
        QVERIFY(editor.selectNextDoubtfulWord());
        QCOMPARE(editor.textCursor().selectedText(), QString("regster"));
        QVERIFY(editor.selectNextDoubtfulWord());
        QCOMPARE(editor.textCursor().selectedText(), QString("ledgr"));
        editor.setPage(4, "the ledger of the parish", PageText{}, 0);
        QVERIFY(!editor.selectNextDoubtfulWord());
    }

    // Spelling follows the languages each page was read in: a page read again in German is checked
    // in German, the others in the project's languages.
    void spellingFollowsEachPagesLanguages() {
        const QString project = readProject("languages", {{"the parish register"}, {"das Kirchenbuch der Gemeinde"}});
        QVERIFY(!project.isEmpty());
        // As Read Again in German would have left them (the engines record the languages they read with).
        QCOMPARE(runProgram("sqlite3", {project, "UPDATE results SET language='eng'; UPDATE results SET language='deu' "
                                                 "WHERE page_id=(SELECT max(page_id) FROM results)"}).exitCode, 0);
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        w.goToRow(1);
        QCOMPARE(w.editor()->spellLanguage(), QString("deu"));
        if (QFileInfo::exists("/usr/share/hunspell/de_DE.dic")) {
            QVERIFY(!w.editor()->isMisspelled("Kirchenbuch"));
            QVERIFY(w.editor()->isMisspelled("Kirchenbuchx"));
        }
        w.goToRow(0);
        QCOMPARE(w.editor()->spellLanguage(), QString("eng"));
    }

    // The context menu's spelling: suggestions replace the word (not its comma), and a word added to
    // the project's dictionary is stored in the project and known when it is opened again.
    void spellingSuggestsAndLearnsTheProjectsWords() {
        const QString project = queuedProject("spelling", 1);
        QVERIFY(!project.isEmpty());
        {
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::OpenExisting);
            QVERIFY((*store)->addCorrection((*store)->pages()->front().id, "the ledgr, wrote Quiremarck"));
        }
        Settings().setLanguages("eng");
        {
            MainWindow w;
            w.show();
            QVERIFY(w.openProject(project));
            w.goToRow(0);
            PageEditor* e = w.editor();
            if (!e->spellCheckAvailable()) QSKIP("no English hunspell dictionary installed");
            QCOMPARE(e->toPlainText(), QString("the ledgr, wrote Quiremarck"));
            QVERIFY(e->spellingActions(0, this).isEmpty());  // "the" is spelled right
            QList<QAction*> actions = e->spellingActions(6, this);
            QAction* ledger = nullptr;
            for (QAction* a : actions)
                if (a->text() == "ledger") ledger = a;
            QVERIFY2(ledger, "hunspell offers no \"ledger\" for \"ledgr\"");
            QCOMPARE(actions.back()->objectName(), QString("addToDictionary"));
            ledger->trigger();
            QCOMPARE(e->toPlainText(), QString("the ledger, wrote Quiremarck"));
            QVERIFY(e->isMisspelled("Quiremarck"));
            actions = e->spellingActions(e->toPlainText().indexOf("Quiremarck") + 2, this);
            QVERIFY(!actions.isEmpty());
            actions.back()->trigger();
            QVERIFY(!e->isMisspelled("Quiremarck"));
            QCOMPARE(*w.store()->projectWords(), std::vector<std::string>{"Quiremarck"});
            e->flush();
            w.close();
        }
        MainWindow w;
        QVERIFY(w.openProject(project));
        QVERIFY(!w.editor()->isMisspelled("Quiremarck"));
        QCOMPARE(*w.store()->effectiveText(w.store()->pages()->front().id), std::string("the ledger, wrote Quiremarck"));
    }

    // Export Book offers a folder beside the project, named after it (not the home folder).
    void exportDialogOffersAFolderBesideTheProject() {
        const QString project = queuedProject("beside", 1);
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        QAction* exportAct = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_E)) exportAct = a;
        QVERIFY(exportAct);
        QString offered;
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<QDialog*>(QApplication::activeModalWidget()));
            auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            if (auto* folder = dialog->findChild<QLineEdit*>()) offered = folder->text();
            auto* marks = dialog->findChild<QCheckBox*>("pageMarkers");
            if (marks) offered += " (page markers offered)";
            dialog->reject();
        });
        exportAct->trigger();
        QCOMPARE(offered, m_dir.filePath("beside export") + " (page markers offered)");
    }

    // Undo survives a visit to another page; Page History lists the engine's reading and every
    // correction, compares, and reverts by saving the old text as a new correction.
    void historyAndUndoAcrossPages() {
        const QString project = readProject("history", {{"The engine read"}, {"The engine read"}});
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        w.goToRow(0);
        PageEditor* e = w.editor();
        e->setFocus();
        e->moveCursor(QTextCursor::End);
        QTest::keyClicks(e, " first second");
        e->flush();
        QCOMPARE(e->toPlainText(), QString("The engine read first second"));
        w.goToRow(1);
        QCOMPARE(e->toPlainText(), QString("The engine read"));
        QVERIFY(!e->document()->isUndoAvailable());
        w.goToRow(0);
        QVERIFY(e->document()->isUndoAvailable());
        e->undo();
        QCOMPARE(e->toPlainText(), QString("The engine read"));
        e->flush();
        const int64_t id = w.pageModel()->page(0)->id;
        QCOMPARE(*w.store()->effectiveText(id), std::string("The engine read"));

        auto versions = pageVersions(*w.store(), id);
        QCOMPARE(int(versions->size()), 3);  // the engine's reading and two saved states
        QCOMPARE((*versions)[0].text, std::string("The engine read"));
        QAction* history = w.findChild<QAction*>("historyAction");
        QVERIFY(history && history->isEnabled());
        int listed = 0;
        QString comparison;
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<QDialog*>(QApplication::activeModalWidget()));
            auto* dialog = qobject_cast<PageHistoryDialog*>(QApplication::activeModalWidget());
            QVERIFY(dialog);
            listed = dialog->findChild<QListWidget*>("versions")->count();
            dialog->selectVersion(1);  // "… first second": both words gone since
            comparison = dialog->comparison();
            dialog->findChild<QPushButton*>("revert")->click();
        });
        history->trigger();
        QCOMPARE(listed, 3);
        QVERIFY2(comparison.contains("second") && comparison.contains("line-through"), qPrintable(comparison));
        QCOMPARE(e->toPlainText(), QString("The engine read first second"));  // reverted to version 1
        QCOMPARE(*w.store()->effectiveText(id), std::string("The engine read first second"));
        QCOMPARE(int(pageVersions(*w.store(), id)->size()), 4);  // nothing lost: the revert is one more
        QVERIFY(w.revertCurrentPage(0));
        QCOMPARE(e->toPlainText(), QString("The engine read"));
    }

    // F7 walks the doubtful words of the whole book: on to the next page that has one, round to the start.
    void nextDoubtfulWordCrossesPages() {
        const QString project = readProject("doubt", {{"the parish ledger"}, {"the ledgr of"}, {"a quiet@30 harbour"}});
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        if (!w.editor()->spellCheckAvailable()) QSKIP("no English hunspell dictionary installed");
        QVERIFY(QTest::qWaitForWindowActive(&w));  // F7 is a window shortcut
        w.goToRow(0);
        QTest::keyClick(&w, Qt::Key_F7);
        QCOMPARE(w.currentRow(), 1);
        QCOMPARE(w.editor()->textCursor().selectedText(), QString("ledgr"));
        QTest::keyClick(&w, Qt::Key_F7);
        QCOMPARE(w.currentRow(), 2);
        QCOMPARE(w.editor()->textCursor().selectedText(), QString("quiet"));  // the engine was unsure of it
        QTest::keyClick(&w, Qt::Key_F7);
        QCOMPARE(w.currentRow(), 1);  // round the book
        QCOMPARE(w.editor()->textCursor().selectedText(), QString("ledgr"));
    }

    // A low-confidence word is outlined on the scan in a colour that stands out from white, yellowed
    // and grey paper alike (contrast 3:1 or more), in light and dark themes.
    void lowConfidenceWordsShowOnAnyPaper() {
        PageView view;
        PageText words;
        words.width = 400, words.height = 200;
        Line l;
        l.words = {{"sure", {10, 10, 60, 20}, 95}, {"unsure", {80, 10, 80, 20}, 20}};
        words.lines.push_back(l);
        QImage scan(400, 200, QImage::Format_RGB32);
        scan.fill(QColor(230, 215, 170));
        view.setPage(scan, words, QPoint(0, 0), 60);
        QGraphicsRectItem* sure = view.wordItem(0);
        QGraphicsRectItem* unsure = view.wordItem(1);
        QVERIFY(sure && unsure);
        QVERIFY(unsure->pen().widthF() >= 2 && unsure->pen().isCosmetic());
        QVERIFY(unsure->pen().color() != sure->pen().color());
        for (const QColor paper : {QColor(255, 255, 255), QColor(230, 215, 170), QColor(200, 185, 140), QColor(180, 180, 180)})
            QVERIFY2(contrastRatio(unsure->pen().color(), paper) >= 3.0, qPrintable(paper.name()));
    }

    // Languages are picked from a named list, several in order; a missing model names its package.
    void languagesArePickedByName() {
        LanguagePicker picker({"eng", "chi_sim", "osd"});
        QCOMPARE(LanguagePicker::packageOf("chi_sim"), QString("tesseract-ocr-chi-sim"));
        QListWidgetItem* german = nullptr;
        QListWidgetItem* chinese = nullptr;
        for (int i = 0; i < picker.count(); ++i) {
            if (picker.item(i)->data(Qt::UserRole) == "deu") german = picker.item(i);
            if (picker.item(i)->data(Qt::UserRole) == "chi_sim") chinese = picker.item(i);
            QVERIFY(picker.item(i)->data(Qt::UserRole) != "osd");  // not a language
        }
        QVERIFY(german && chinese);
        QVERIFY(!(german->flags() & Qt::ItemIsEnabled));
        QVERIFY2(german->text().contains("tesseract-ocr-deu"), qPrintable(german->text()));
        picker.setLanguages("chi_sim+eng+deu");  // deu is not installed: left out
        QCOMPARE(picker.languages(), QString("chi_sim+eng"));
        chinese->setCheckState(Qt::Unchecked);
        chinese->setCheckState(Qt::Checked);  // ticked again: now after English
        QCOMPARE(picker.languages(), QString("eng+chi_sim"));
        // The Settings dialog uses it.
        Settings settings;
        SettingsDialog dialog(settings);
        QVERIFY(dialog.findChild<LanguagePicker*>("languagePicker"));
    }

    // File > Project Properties: the fields typed are stored in the project.
    void propertiesDialogStoresTheBooksData() {
        const QString project = queuedProject("props", 1);
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        QAction* props = w.findChild<QAction*>("propertiesAction");
        QVERIFY(props && props->isEnabled());
        QString placeholder;
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<QDialog*>(QApplication::activeModalWidget()));
            auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            placeholder = dialog->findChild<QLineEdit*>("title")->placeholderText();
            QTest::keyClicks(dialog->findChild<QLineEdit*>("title"), "Colonial Florida");
            QTest::keyClicks(dialog->findChild<QLineEdit*>("author"), "  A. Historian ");
            dialog->accept();
        });
        props->trigger();
        QCOMPARE(placeholder, QString("props"));  // the title used while none is set
        const auto p = loadProperties(*w.store());
        QVERIFY(p);
        QCOMPARE(p->title, std::string("Colonial Florida"));
        QCOMPARE(p->author, std::string("A. Historian"));
        QVERIFY(p->language.empty());
    }

    // The page list's context menu skips a queued page and reads a failed one again, in the project.
    void pageMenuSkipsAndRetries() {
        const QString project = queuedProject("menu", 3);
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        w.goToRow(1);
        QAction* skip = nullptr;
        QAction* retry = nullptr;
        for (QAction* a : w.pageList()->actions()) {
            if (a->objectName() == "skipPageAction") skip = a;
            if (a->objectName() == "retryPageAction") retry = a;
        }
        QVERIFY(skip && retry);
        // The Log panel stays out of the way until it has something to say.
        auto* logDock = w.findChild<QDockWidget*>("logDock");
        QVERIFY(logDock && !logDock->isVisible());
        skip->trigger();
        QVERIFY(logDock->isVisible());
        QCOMPARE(w.pageModel()->page(1)->status, PageStatus::Failed);
        QVERIFY(w.pageModel()->page(1)->failure.find("skipped on request") != std::string::npos);
        retry->trigger();
        QCOMPARE(w.pageModel()->page(1)->status, PageStatus::Queued);
        auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
        QVERIFY(store);
        QCOMPARE((*store)->counts()->queued, 3);
    }

    // The page browser turns, removes, moves (keys and dragging) and adds pages; each change is
    // undone from the Pages menu, also after reopening; Delete in the editor stays the text's.
    void pagesAreTurnedRemovedMovedAndUndone() {
        const QString project = readProject("arrange", {{"alpha page"}, {"bravo page"}, {"charlie page"}, {"delta page"}});
        QVERIFY(!project.isEmpty());
        std::vector<qint64> ids;
        auto order = [&](MainWindow& w) {
            std::vector<qint64> out;
            for (int r = 0; r < w.pageModel()->rowCount(); ++r) out.push_back(w.pageModel()->page(r)->id);
            return out;
        };
        auto action = [](MainWindow& w, const char* name) {
            for (QAction* a : w.pageList()->actions())
                if (a->objectName() == name) return a;
            return static_cast<QAction*>(nullptr);
        };
        {
            MainWindow w;
            w.show();
            QVERIFY(QTest::qWaitForWindowActive(&w));
            QVERIFY(w.openProject(project));
            ids = order(w);
            QCOMPARE(int(ids.size()), 4);
            w.goToRow(1);
            action(w, "rotateClockwiseAction")->trigger();
            QCOMPARE(w.pageModel()->page(1)->rotation, 90);
            QCOMPARE(w.pageModel()->page(1)->status, PageStatus::Queued);  // to be read the right way up
            QCOMPARE(w.currentRow(), 1);
            QTRY_VERIFY(w.pageImageShown());
            QVERIFY(!w.pageView()->wordItem(0));  // the old reading's boxes would lie across the turned scan

            // Pages 3 and 4 chosen in the list, Delete pressed there: out of the book.
            w.pageList()->setFocus();
            auto* sel = w.pageList()->selectionModel();
            auto* model = w.pageList()->model();
            sel->select(QItemSelection(model->index(2, 0), model->index(3, 0)), QItemSelectionModel::ClearAndSelect);
            QTest::keyClick(w.pageList(), Qt::Key_Delete);
            QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[1]}));
            // Delete in the editor deletes text, not pages.
            w.goToRow(0);
            w.editor()->setFocus();
            QTest::keyClick(w.editor(), Qt::Key_Delete);
            QCOMPARE(w.pageModel()->rowCount(), 2);

            // Page 2 dragged above page 1 (the drop the list view makes), then moved down with the keys.
            QMimeData* dragged = model->mimeData({model->index(1, 0)});
            QVERIFY(model->dropMimeData(dragged, Qt::MoveAction, 0, 0, {}));
            delete dragged;
            QTRY_COMPARE(order(w), (std::vector<qint64>{ids[1], ids[0]}));
            QCOMPARE(w.currentRow(), 0);  // the dragged page stays the one shown
            w.pageList()->setFocus();
            sel->select(model->index(0, 0), QItemSelectionModel::ClearAndSelect);
            QTest::keyClick(w.pageList(), Qt::Key_Down, Qt::ControlModifier | Qt::ShiftModifier);
            QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[1]}));
            QVERIFY2(action(w, "undoPageChangeAction")->text().contains("moved page 1 to the end"),
                     qPrintable(action(w, "undoPageChangeAction")->text()));
        }
        // Reopened: the changes are the project's; undone one by one.
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[1]}));
        QAction* undo = action(w, "undoPageChangeAction");
        QVERIFY(undo->isEnabled());
        // One of the two removed pages put back on its own, from the Pages menu, and taken out again.
        auto* putBack = w.findChild<QMenu*>("restorePagesMenu");
        QVERIFY(putBack && putBack->isEnabled());
        emit putBack->aboutToShow();
        QCOMPARE(putBack->actions().size(), 2);
        putBack->actions()[1]->trigger();  // the fourth scan: where it stood (the second scan went to the end)
        QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[3], ids[1]}));
        QVERIFY2(undo->text().contains("put back page 2"), qPrintable(undo->text()));
        undo->trigger();
        QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[1]}));
        undo->trigger();  // the move down
        undo->trigger();  // the drag
        QCOMPARE(order(w), (std::vector<qint64>{ids[0], ids[1]}));
        undo->trigger();  // the removal
        QCOMPARE(order(w), ids);
        undo->trigger();  // the turn: never read turned, so its reading stands
        QCOMPARE(w.pageModel()->page(1)->rotation, 0);
        QCOMPARE(w.pageModel()->page(1)->status, PageStatus::Done);
        QVERIFY(!undo->isEnabled());

        // More scans, added after the current page and read at once.
        const QString more = m_dir.filePath("arrange-more.tif");
        writeTiffVolume(more, 1, [](int) { return std::vector<std::string>{"an added page"}; }, 400, 560, 1.0);
        w.goToRow(0);
        QSignalSpy finished(&w, &MainWindow::runFinished);
        QVERIFY(w.arranger()->addScans({more}));
        QCOMPARE(w.pageModel()->rowCount(), 5);
        QVERIFY(QString::fromStdString(w.pageModel()->page(1)->sourceFile).endsWith("arrange-more.tif"));
        QVERIFY(finished.wait(120000));
        QCOMPARE(w.pageModel()->page(1)->status, PageStatus::Done);
        QVERIFY(undo->text().contains("before page 2"));
        QVERIFY(!w.arranger()->addScans({more}));  // in the project already: said, nothing changes
        QVERIFY(w.lastError().contains("already"));
    }

    // Read Again asks the engine and languages and, for pages with corrections, whether those stay
    // the text; the earlier readings and the corrections stay in the pages' history.
    void readAgainKeepsEarlierReadingsAndAsksAboutCorrections() {
        const QString project = readProject("reread", {{"alpha page"}, {"bravo page"}});
        QVERIFY(!project.isEmpty());
        {
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::OpenExisting);
            QVERIFY(store && (*store)->addCorrection((*(*store)->pages())[0].id, "alpha page, corrected"));
        }
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        auto* model = w.pageList()->model();
        w.pageList()->selectionModel()->select(QItemSelection(model->index(0, 0), model->index(1, 0)),
                                               QItemSelectionModel::ClearAndSelect);
        QAction* reread = w.findChild<QAction*>("rereadAction");
        QVERIFY(reread && reread->isEnabled());
        bool asked = false;
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<RereadDialog*>(QApplication::activeModalWidget()));
            auto* dialog = qobject_cast<RereadDialog*>(QApplication::activeModalWidget());
            auto* engine = dialog->findChild<QComboBox*>("rereadEngine");
            engine->setCurrentIndex(engine->findData("tesseract"));
            auto* replace = dialog->findChild<QRadioButton*>("rereadReplaceCorrections");
            asked = replace != nullptr;
            if (replace) replace->setChecked(true);
            dialog->accept();
        });
        QSignalSpy finished(&w, &MainWindow::runFinished);
        reread->trigger();
        QVERIFY(asked);
        QVERIFY(finished.wait(120000));
        for (int row = 0; row < 2; ++row) {
            const int64_t id = w.pageModel()->page(row)->id;
            QCOMPARE(w.pageModel()->page(row)->status, PageStatus::Done);
            const auto versions = *pageVersions(*w.store(), id);
            QCOMPARE(versions.front().kind, PageVersion::Kind::EarlierReading);
            QCOMPARE(versions.front().text, std::string(row == 0 ? "alpha page" : "bravo page"));
            QVERIFY(versions.back().current);
            QVERIFY2(QString::fromStdString(*w.store()->effectiveText(id)).contains("a page"),
                     w.store()->effectiveText(id)->c_str());
        }
        // The page on screen shows its new reading, and its words over the scan.
        QCOMPARE(w.currentRow(), 0);
        QTRY_VERIFY(w.editor()->toPlainText().contains("a page") && !w.editor()->toPlainText().contains("alpha"));
        QTRY_VERIFY(w.pageImageShown() && w.pageView()->wordItem(0));
        const auto first = *pageVersions(*w.store(), w.pageModel()->page(0)->id);
        QCOMPARE(int(first.size()), 3);
        QCOMPARE(first[1].kind, PageVersion::Kind::SetAsideCorrection);
        QVERIFY(!w.pageModel()->page(0)->corrected);

        // Read again keeping a correction: the page on screen still shows the correction afterwards.
        QVERIFY(w.store()->addCorrection(w.pageModel()->page(0)->id, "typed by the archivist"));
        w.goToRow(1);
        w.goToRow(0);
        QCOMPARE(w.editor()->toPlainText(), QString("typed by the archivist"));
        w.pageList()->selectionModel()->select(model->index(0, 0), QItemSelectionModel::ClearAndSelect);
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<RereadDialog*>(QApplication::activeModalWidget()));
            qobject_cast<RereadDialog*>(QApplication::activeModalWidget())->accept();  // corrections kept
        });
        reread->trigger();
        QVERIFY(finished.wait(120000));
        QTRY_COMPARE(w.editor()->toPlainText(), QString("typed by the archivist"));
        QCOMPARE(*w.store()->effectiveText(w.pageModel()->page(0)->id), std::string("typed by the archivist"));
    }

    // Layout by hand: regions drawn by dragging on the scan (the kind chosen first), put in reading
    // order by clicking, retyped, deleted and undone, each change stored at once; then the page is
    // read again in them: the heading first, then the right column, then the left, each whole.
    void regionsAreDrawnOrderedAndReadIn() {
        cv::Mat scan(900, 1400, CV_8UC1, cv::Scalar(255));
        textPage({"Chapter One"}, 700, 220, 1.4).copyTo(scan(cv::Rect(350, 10, 700, 220)));
        textPage({"left column first", "line of the left"}, 640, 400, 1.4).copyTo(scan(cv::Rect(20, 300, 640, 400)));
        textPage({"right column first", "line of the right"}, 640, 400, 1.4).copyTo(scan(cv::Rect(740, 300, 640, 400)));
        const QString png = m_dir.filePath("regions.png"), project = m_dir.filePath("regions.quire");
        QVERIFY(cv::imwrite(png.toStdString(), scan));
        const auto r = runCli({"transcribe", png, "--project", project, "--no-deskew"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(w.openProject(project));
        QTRY_VERIFY(w.pageImageShown());
        PageView* view = w.pageView();
        auto drag = [&](QPointF from, QPointF to) {
            const QPoint a = view->mapFromScene(from), b = view->mapFromScene(to);
            QTest::mousePress(view->viewport(), Qt::LeftButton, {}, a);
            QTest::mouseMove(view->viewport(), (a + b) / 2);
            QTest::mouseMove(view->viewport(), b);
            QTest::mouseRelease(view->viewport(), Qt::LeftButton, {}, b);
        };
        auto stored = [&] { return *pageRegions(*w.store(), w.pageModel()->page(0)->id); };
        w.findChild<QAction*>("regionModeAction")->trigger();
        QVERIFY(view->regionMode());
        drag({730, 290}, {1390, 710});  // the right column, a text region
        drag({10, 290}, {670, 710});    // the left column
        w.findChild<QAction*>("regionKind-heading")->trigger();
        drag({340, 100}, {1060, 230});
        QCOMPARE(int(stored().size()), 3);
        QCOMPARE(stored()[2].kind, RegionKind::Heading);
        QVERIFY(std::abs(stored()[0].box.x - 730) <= 3 && std::abs(stored()[0].box.right() - 1390) <= 3);
        // A region resized by dragging its edge, and back with Ctrl+Z.
        const int rightEdge = stored()[0].box.right();
        drag({double(rightEdge), 500}, {double(rightEdge) - 100, 500});
        QVERIFY2(std::abs(stored()[0].box.right() - (rightEdge - 100)) <= 3, qPrintable(QString::number(stored()[0].box.right())));
        QCOMPARE(stored()[0].box.x, 730);
        QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(stored()[0].box.right(), rightEdge);
        // Reading order by clicking: the heading, then the right column (the left follows).
        w.findChild<QAction*>("regionOrderAction")->trigger();
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(QPointF(700, 160)));
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(QPointF(1000, 500)));
        QVERIFY(!view->regionLayer()->ordering());
        QCOMPARE(stored()[0].kind, RegionKind::Heading);
        QVERIFY(stored()[1].box.x > 700 && stored()[2].box.x < 100);
        // Retyped, then undone with Ctrl+Z; deleted with Delete, then undone.
        view->regionLayer()->setKind(2, RegionKind::Ignore);
        QCOMPARE(stored()[2].kind, RegionKind::Ignore);
        QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(stored()[2].kind, RegionKind::Text);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(QPointF(300, 500)));
        QCOMPARE(view->regionLayer()->selected(), 2);
        QTest::keyClick(view, Qt::Key_Delete);
        QCOMPARE(int(stored().size()), 2);
        QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(int(stored().size()), 3);
        // Read again in the regions.
        QSignalSpy finished(&w, &MainWindow::runFinished);
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<RereadDialog*>(QApplication::activeModalWidget()));
            qobject_cast<RereadDialog*>(QApplication::activeModalWidget())->accept();
        });
        w.findChild<QAction*>("regionReadAction")->trigger();
        QVERIFY(finished.wait(120000));
        QTRY_VERIFY2(w.editor()->toPlainText().contains("Chapter"), qPrintable(w.editor()->toPlainText()));
        const QString text = w.editor()->toPlainText();
        const int heading = text.indexOf("Chapter"), right = text.indexOf("right column"), left = text.indexOf("left column");
        QVERIFY2(heading >= 0 && right > heading && left > right, qPrintable(text));
        // Each column whole: the right one's second line before any of the left one.
        QVERIFY2(text.indexOf("line of the right") > right && text.indexOf("line of the right") < left, qPrintable(text));
        // The regions are shown again over the page read in them.
        QTRY_COMPARE(int(view->regionLayer()->regions().size()), 3);
        // One region read again alone, from its menu: the run says so, and the text keeps its order.
        QTRY_VERIFY(w.pageImageShown() && !w.isRunning());
        QTimer::singleShot(0, &w, [&] {
            QTRY_VERIFY(qobject_cast<RereadDialog*>(QApplication::activeModalWidget()));
            qobject_cast<RereadDialog*>(QApplication::activeModalWidget())->accept();
        });
        emit view->regionLayer()->readAgainAsked(1);
        QVERIFY(finished.wait(120000));
        QTRY_VERIFY(w.findChild<QPlainTextEdit*>("log")->toPlainText().contains("its region 2 (text) read again"));
        QTRY_VERIFY(w.editor()->toPlainText().indexOf("right column") > w.editor()->toPlainText().indexOf("Chapter"));
    }

    // Find and replace across the book, driven through the panel: a hit opens its page with the words
    // selected, Replace goes through the editor (a correction), Replace All stores one correction per
    // page and is undone exactly.
    void findAndReplaceAcrossTheBook() {
        const QString project = readProject("find", {{"The colour of the sea"}, {"Colour and colours", "of the colour"}, {"no match here"}});
        QVERIFY(!project.isEmpty());
        std::vector<int64_t> ids;
        {
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            for (const auto& p : *(*store)->pages()) ids.push_back(p.id);
        }
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        QAction* findAct = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->shortcuts().contains(QKeySequence(QKeySequence::Find))) findAct = a;
        QVERIFY(findAct);
        findAct->trigger();
        FindPanel* panel = w.findPanel();
        QTRY_VERIFY(panel->isVisible());

        panel->setQuery("colour", SearchMode::WholeWord, false);
        QVERIFY(panel->findAll());
        QCOMPARE(int(panel->hits().size()), 3);  // not "colours"
        QCOMPARE(panel->findChild<QListWidget*>("findResults")->count(), 3);
        panel->activateHit(1);
        QCOMPARE(w.pageModel()->page(w.currentRow())->id, ids[1]);
        QCOMPARE(w.editor()->textCursor().selectedText(), QString("Colour"));

        // Replace: the selected hit, through the editor, saved as the page's correction.
        panel->setReplacement("color");
        QVERIFY(panel->replaceCurrent());
        QVERIFY(w.editor()->toPlainText().startsWith("color and colours"));
        QCOMPARE(int(panel->hits().size()), 2);
        w.editor()->flush();
        QCOMPARE(*w.store()->effectiveText(ids[1]), std::string("color and colours\nof the colour"));

        // Replace All: the rest of the book; the page on screen shows it.
        QVERIFY(panel->replaceAll());
        QCOMPARE(*w.store()->effectiveText(ids[0]), std::string("The color of the sea"));
        QCOMPARE(w.editor()->toPlainText(), QString("color and colours\nof the color"));
        QVERIFY(w.pageModel()->page(0)->corrected);
        QVERIFY(!panel->findAll() || panel->hits().empty());

        // Undo Replace All: exactly what it changed, the earlier Replace kept.
        QVERIFY(panel->undoReplaceAll());
        QCOMPARE(*w.store()->effectiveText(ids[0]), std::string("The colour of the sea"));
        QCOMPARE(w.editor()->toPlainText(), QString("color and colours\nof the colour"));
        QVERIFY(!w.pageModel()->page(0)->corrected);

        // A regular expression that does not compile says why.
        panel->setQuery("colou(r", SearchMode::Regex, false);
        QVERIFY(!panel->findAll());
        QVERIFY2(panel->message().contains("not valid"), qPrintable(panel->message()));
    }

    void largeVolumeOpensAndScrolls() {
        // 2,000 queued pages (one multi-page TIFF): the window shows them all, thumbnails come later.
        const QString project = queuedProject("long", 2000);
        QVERIFY(!project.isEmpty());
        MainWindow w;
        w.show();
        QElapsedTimer timer;
        timer.start();
        QVERIFY(w.openProject(project));
        QCoreApplication::processEvents();
        const qint64 openMs = timer.elapsed();
        QCOMPARE(w.pageModel()->rowCount(), 2000);
        // Scrolling to the end asks only for the thumbnails in view.
        w.goToRow(1999);
        QCOMPARE(w.currentRow(), 1999);
        QTRY_VERIFY_WITH_TIMEOUT(w.pageImageShown(), 30000);
        qInfo("opened a 2,000-page project in %lld ms; showed its last page after %lld ms", openMs, timer.elapsed());
    }

    void killedGuiKeepsPagesAndTypedCorrection() {
        const QString project = m_dir.filePath("killed.quire");
        QProcess gui;
        QStringList env = QProcess::systemEnvironment();
        gui.setEnvironment(env << "QT_QPA_PLATFORM=offscreen");
        gui.start(QStringLiteral(QUIRE_GUI_PATH), {"--new", samplePdf(), "--project", project, "--type-into-editor",
                                                  "Typed before the crash"});
        QVERIFY(gui.waitForStarted());
        QString out;
        QTRY_VERIFY_WITH_TIMEOUT((out += QString::fromUtf8(gui.readAllStandardOutput())).contains("typed") ||
                                     gui.state() != QProcess::Running, 60000);
        QVERIFY2(gui.state() == QProcess::Running, qPrintable(out + gui.readAllStandardError()));
        // Let a couple of pages finish, then kill -9 in the middle of the run.
        int done = 0;
        QElapsedTimer t;
        t.start();
        while (done < 2 && t.elapsed() < 120000) {
            QTest::qWait(200);
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            if (store) done = (*store)->counts()->done;
        }
        gui.kill();
        gui.waitForFinished();
        auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::OpenExisting);
        QVERIFY(store);
        QCOMPARE((*store)->integrityCheck().value(), std::string("ok"));
        QVERIFY((*store)->counts()->done >= 2);
        QVERIFY((*store)->counts()->corrected >= 1);
        bool found = false;
        QString all;
        const auto pages = (*store)->pages();  // kept alive: iterating *temporary() would dangle
        QVERIFY(pages);
        for (const auto& p : *pages)
            if (auto c = (*store)->latestCorrection(p.id); c && c->has_value()) {
                all += QString("page %1: %2\n").arg(p.sequence).arg(QString::fromStdString((*c)->text));
                found = found || QString::fromStdString((*c)->text).contains("Typed before the crash");
            }
        QVERIFY2(found, qPrintable(all));
        // Reopening offers to resume the interrupted run.
        (*store).reset();
        MainWindow w;
        w.show();
        QVERIFY(w.openProject(project));
        QVERIFY(w.resumeOffered());
    }
};

int main(int argc, char** argv) {
    // Settings of the test go to a scratch folder, never the user's.
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    TestGui t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_gui.moc"
