// The main window's project: new, open and close, the pages reloaded, the window's state kept
// with the project, the book's properties, and its export.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>

#include "export_dialog.h"
#include "export_progress.h"
#include "find_panel.h"
#include "page_editor.h"
#include "page_list_model.h"
#include "page_view.h"
#include "properties_dialog.h"
#include "quire/export/book.h"
#include "quire/export/exporters.h"
#include "quire/store/project_backups.h"
#include "settings.h"

namespace quire::ui {

bool MainWindow::newProject(const QStringList& inputs, const QString& projectPath, bool start) {
    // Check the inputs before anything is created or the open project is touched.
    for (const QString& in : inputs) {
        auto src = openSource(in.toStdString());
        if (!src) {
            showError(tr("Cannot add %1: %2").arg(in, QString::fromStdString(src.status().message())));
            return false;
        }
    }
    if (QFileInfo::exists(projectPath)) {
        showError(tr("%1 already exists; open it instead, or choose another name.").arg(projectPath));
        return false;
    }
    auto store = ProjectStore::open(projectPath.toStdString(), ProjectStore::Mode::OpenOrCreate);
    if (!store) {
        showError(QString::fromStdString(store.status().message()));
        return false;
    }
    TranscribeParams params = paramsFromSettings();
    for (const QString& in : inputs) params.inputs.emplace_back(in.toStdString());
    if (Status s = registerInputs(**store, params); !s) {
        showError(QString::fromStdString(s.message()));
        return false;
    }
    store->reset();
    if (!openProject(projectPath)) return false;
    if (start) startRun();
    return true;
}

bool MainWindow::openProject(const QString& path) {
    auto store = ProjectStore::open(path.toStdString(), ProjectStore::Mode::OpenExisting);
    // A damaged project with a sound backup: the user may put the backup in place (the damaged
    // file is kept beside it) and open that.
    if (!store && store.status().code() == ErrorCode::Corrupt && !m_restoreAsked)
        if (const auto backup = newestSoundBackup(path.toStdString())) {
            const auto answer = QMessageBox::question(
                this, tr("Restore the backup?"),
                tr("%1 is damaged. Its newest sound backup was taken at %2. Put the backup in place? The damaged file "
                   "is kept beside it, and corrections made after the backup are lost from the project.")
                    .arg(path, QString::fromStdString(backup->takenAt)));
            if (answer == QMessageBox::Yes) {
                auto kept = ProjectStore::restore(path.toStdString(), backup->path);
                if (!kept) {
                    showError(tr("Cannot restore %1: %2").arg(path, QString::fromStdString(kept.status().message())));
                    return false;
                }
                log(tr("Restored %1 from the backup taken at %2; the damaged file is kept as %3.")
                        .arg(path, QString::fromStdString(backup->takenAt), QString::fromStdString(kept->string())),
                    true);
                m_restoreAsked = true;
                const bool opened = openProject(path);
                m_restoreAsked = false;
                return opened;
            }
        }
    if (!store) {
        showError(tr("Cannot open %1: %2").arg(path, QString::fromStdString(store.status().message())));
        return false;  // the open project stays as it was
    }
    closeProject();
    m_store = std::move(*store);
    m_find->setStore(m_store.get());
    m_settings->addRecentProject(path);
    rebuildRecentMenu();
    // Spelling follows the languages the project was transcribed in (else the settings').
    const QString languages = projectLanguages();
    auto words = m_store->projectWords();
    m_editor->setProjectWords(words ? *words : std::vector<std::string>());
    m_editor->setSpellLanguage(languages);
    reloadPages();
    if (m_store->readOnly()) log(tr("%1 is read-only here; corrections cannot be saved.").arg(path), true);
    restoreUiState();
    // A run that was killed or cancelled offers to go on.
    auto last = m_store->lastRun();
    auto counts = m_store->counts();
    m_resumeOffered = false;
    if (last && last->has_value() && counts && counts->queued > 0 && (*last)->state != "finished") {
        m_resumeOffered = true;
        auto* box = new QMessageBox(QMessageBox::Question, tr("Resume transcription?"),
                                    tr("The last run of this project stopped with %1 pages still to do. Resume it now?")
                                        .arg(counts->queued),
                                    QMessageBox::Yes | QMessageBox::No, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        connect(box, &QMessageBox::finished, this, [this](int r) {
            if (r == QMessageBox::Yes) startRun();
        });
        box->open();
    }
    updateTitle();
    updateActions();
    return true;
}

void MainWindow::closeProject() {
    if (!m_store) return;
    if (m_running) {
        m_worker->cancel();
        QElapsedTimer t;
        t.start();
        while (m_running && t.elapsed() < 60000) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    m_editor->flush();
    saveUiState();
    m_editor->clearPage();
    m_flagNote->hide();
    m_view->clearPage();
    m_model->setPages({});
    m_find->setStore(nullptr);
    m_store.reset();
    m_currentRow = -1;
    m_currentPageId = -1;
}

void MainWindow::reloadPages() {
    if (!m_store) return;
    auto pages = m_store->pages();
    if (!pages) {
        showError(QString::fromStdString(pages.status().message()));
        return;
    }
    m_model->setPages(std::move(*pages));
}

void MainWindow::saveUiState() {
    if (!m_store || m_store->readOnly() || m_currentRow < 0) return;
    (void)m_store->setMeta("ui.page", std::to_string(m_currentRow));
    (void)m_store->setMeta("ui.zoom", std::to_string(m_view->zoom()));
    (void)m_store->setMeta("ui.zoomMode", std::to_string(int(m_view->zoomMode())));
    const QPoint s = m_view->scrollPosition();
    (void)m_store->setMeta("ui.scroll", std::to_string(s.x()) + "," + std::to_string(s.y()));
}

void MainWindow::restoreUiState() {
    const int row = QString::fromStdString(m_store->meta("ui.page").value()).toInt();
    const double zoom = QString::fromStdString(m_store->meta("ui.zoom").value()).toDouble();
    const int mode = QString::fromStdString(m_store->meta("ui.zoomMode").value()).toInt();
    const QStringList scroll = QString::fromStdString(m_store->meta("ui.scroll").value()).split(',');
    goToRow(std::clamp(row, 0, std::max(0, m_model->rowCount() - 1)));
    auto apply = [this, zoom, mode, scroll] {
        if (mode == int(PageView::ZoomMode::Custom) && zoom > 0) m_view->setZoom(zoom);
        else if (mode == int(PageView::ZoomMode::FitPage)) m_view->fitPage();
        if (scroll.size() == 2) m_view->setScrollPosition({scroll[0].toInt(), scroll[1].toInt()});
    };
    if (pageImageShown()) apply();
    else {
        auto conn = std::make_shared<QMetaObject::Connection>();
        *conn = connect(this, &MainWindow::pageShown, this, [this, conn, apply](int) {
            disconnect(*conn);
            apply();
        });
    }
}

bool MainWindow::exportBook(const QString& dir, const QStringList& formats, bool pageMarkers, bool pdfA) {
    if (!m_store) return false;
    m_editor->flush();
    auto fmts = parseExportFormats(formats.join(',').toStdString());
    if (!fmts) {
        showError(QString::fromStdString(fmts.status().message()));
        return false;
    }
    m_settings->setExportFormats(formats);
    m_settings->setExportPageMarkers(pageMarkers);
    m_settings->setExportPdfA(pdfA);
    ExportOptions opt;
    opt.outDir = dir.toStdString();
    opt.formats = *fmts;
    opt.pageMarkers = pageMarkers;
    opt.pdfA = pdfA;
    const Status s = exportWithProgress(m_store->path().string(), opt, this);
    if (!s) {
        if (s.code() != ErrorCode::Cancelled) showError(tr("Export failed: %1").arg(QString::fromStdString(s.message())));
        return false;
    }
    log(tr("Exported %1 to %2").arg(formats.join(", "), dir));
    return true;
}

void MainWindow::chooseNewProject() {
    const QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Choose scans"), m_settings->lastOpenDir(),
        tr("Scans (*.pdf *.tif *.tiff *.png *.jpg *.jpeg *.bmp);;All files (*)"));
    if (files.isEmpty()) return;
    m_settings->setLastOpenDir(QFileInfo(files.first()).absolutePath());
    const QString project = QFileDialog::getSaveFileName(
        this, tr("Save the new project as"), QFileInfo(files.first()).absolutePath() + "/" +
                                                  QFileInfo(files.first()).completeBaseName() + ".quire",
        tr("Quire projects (*.quire)"));
    if (!project.isEmpty()) newProject(files, project);
}

void MainWindow::chooseNewProjectFromFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose a folder of page images"), m_settings->lastOpenDir());
    if (dir.isEmpty()) return;
    m_settings->setLastOpenDir(dir);
    const QString project = QFileDialog::getSaveFileName(this, tr("Save the new project as"), dir + ".quire",
                                                         tr("Quire projects (*.quire)"));
    if (!project.isEmpty()) newProject({dir}, project);
}

void MainWindow::chooseOpenProject() {
    const QString p = QFileDialog::getOpenFileName(this, tr("Open project"), m_settings->lastOpenDir(),
                                                   tr("Quire projects (*.quire)"));
    if (p.isEmpty()) return;
    m_settings->setLastOpenDir(QFileInfo(p).absolutePath());
    openProject(p);
}

bool MainWindow::setProperties(const ProjectProperties& properties) {
    if (!m_store) return false;
    if (Status s = saveProperties(*m_store, properties); !s) {
        showError(tr("The properties could not be saved: %1").arg(QString::fromStdString(s.message())));
        return false;
    }
    return true;
}

QString MainWindow::projectLanguages() const {
    if (auto run = m_store->lastRun(); run && run->has_value()) {
        const QString used = QJsonDocument::fromJson(QByteArray::fromStdString((*run)->params)).object().value("languages").toString();
        if (!used.isEmpty()) return used;
    }
    return m_settings->languages();
}

void MainWindow::showPropertiesDialog() {
    if (!m_store) return;
    auto current = loadProperties(*m_store);
    if (!current) {
        showError(QString::fromStdString(current.status().message()));
        return;
    }
    PropertiesDialog dlg(*current, QFileInfo(projectPath()).completeBaseName(), projectLanguages(), this);
    if (dlg.exec() == QDialog::Accepted) setProperties(dlg.properties());
}

void MainWindow::showExportDialog() {
    // Beside the project, in a folder named after it (not the home folder, nor another project's).
    const QFileInfo project(projectPath());
    ExportDialog dlg(*m_settings, project.absoluteDir().filePath(project.completeBaseName() + " export"), this);
    if (dlg.exec() == QDialog::Accepted) exportBook(dlg.folder(), dlg.formats(), dlg.pageMarkers(), dlg.pdfA());
}

}  // namespace quire::ui
