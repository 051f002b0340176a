// The main window's run: its parameters from the settings, starting, pausing and cancelling it,
// reading chosen pages (or a region) again, and what the run reports as it goes.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QLabel>
#include <QProgressBar>

#include "page_editor.h"
#include "page_list_model.h"
#include "reread_dialog.h"
#include "run_chart.h"
#include "settings.h"

namespace quire::ui {

namespace {
QString duration(double secs) {
    if (secs < 0) return QStringLiteral("?");
    const int s = int(secs + 0.5);
    return s >= 3600 ? QStringLiteral("%1h%2m").arg(s / 3600).arg((s / 60) % 60, 2, 10, QChar('0'))
                     : QStringLiteral("%1m%2s").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}
}  // namespace

TranscribeParams MainWindow::paramsFromSettings() const {
    TranscribeParams p;
    p.recognizer.engine = m_settings->engine().toStdString();
    p.recognizer.readerModel = m_settings->readerModel().toStdString();
    // PP-OCR and the reader on the GPU chosen in the settings (Tesseract runs on the CPU); without
    // one they go on with the CPU and the Log panel says why.
    p.recognizer.device = m_settings->device() == "gpu" && p.recognizer.engine != "tesseract" ? "cuda" : "cpu";
    p.recognizer.languages = m_settings->languages().toStdString();
    // The model folders a user may set in the environment (the engine reads none).
    if (p.recognizer.readerModel.empty()) p.recognizer.readerModel = qEnvironmentVariable("QUIRE_READER_MODEL").toStdString();
    p.recognizer.ppocrDir = qEnvironmentVariable("QUIRE_PPOCR_DIR").toStdString();
    p.threads = m_settings->threads();
    p.flag.meanBelow = m_settings->flagBelow();
    p.preprocess.deskew = m_settings->deskew();
    p.preprocess.normalizeBackground = m_settings->normalizeBackground();
    p.preprocess.binarize = m_settings->binarize();
    p.preprocess.split = m_settings->splitSpreads() ? SplitMode::Auto : SplitMode::None;
    p.source.pdfDpi = m_settings->pdfDpi();
    p.source.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    p.backgroundPriority = true;  // the GUI thread must never wait for a core
    return p;
}

void MainWindow::startRun() { runWith(paramsFromSettings()); }

void MainWindow::rereadChosenPages() {
    if (!m_store || m_store->readOnly()) return;
    if (m_running) {
        showError(tr("Wait until the run ends (or cancel it) to read pages again."));
        return;
    }
    rereadPages(chosenPages());
}

void MainWindow::rereadPages(const std::vector<int64_t>& chosen, int region) {
    if (!m_store || m_store->readOnly() || m_running || chosen.empty()) return;
    int corrected = 0;
    for (const int64_t id : chosen)
        if (const PageRecord* p = m_model->page(m_model->rowOf(id)); p && p->corrected) ++corrected;
    RereadDialog dlg(int(chosen.size()), corrected, m_settings->engine(), m_settings->languages(), this);
    if (dlg.exec() != QDialog::Accepted) return;
    TranscribeParams params = paramsFromSettings();
    params.recognizer.engine = dlg.engine().toStdString();
    params.recognizer.languages = dlg.languages().toStdString();
    params.rereadPages = chosen;
    params.rereadReplacesCorrections = dlg.replaceCorrections();
    if (region >= 0 && chosen.size() == 1) params.rereadRegion[chosen.front()] = region;
    runWith(params);
}

void MainWindow::runWith(const TranscribeParams& params) {
    if (!m_store || m_running) return;
    m_editor->flush();
    RunRequest req;
    req.projectPath = projectPath();
    req.params = params;
    m_running = true;
    m_longestStallMs = 0;
    m_stallClock.restart();  // work done before the run (e.g. creating the project) is not a stall of it
    m_chart->clear();
    m_pauseAct->setChecked(false);
    const std::string engine = chooseEngine(req.params.recognizer.engine, req.params.recognizer.languages, nullptr,
                                            req.params.recognizer.readerModel);
    log(tr("Transcription started (%1, languages %2)")
            .arg(QString::fromStdString(engine), QString::fromStdString(req.params.recognizer.languages)));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, req] { w->run(req); }, Qt::QueuedConnection);
    updateTitle();
    updateActions();
}

void MainWindow::setPaused(bool paused) {
    if (!m_running) return;
    m_worker->setPaused(paused);
    log(paused ? tr("Paused: pages in progress finish, no new page starts") : tr("Resumed"));
}

void MainWindow::cancelRun() {
    if (!m_running) return;
    m_worker->setPaused(false);
    m_worker->cancel();
    log(tr("Cancelling: pages in progress are finished and saved"));
}

void MainWindow::onProgress(const RunSample& s) {
    m_progress->setMaximum(std::max(1, s.total));
    m_progress->setValue(s.pagesDone);
    m_progressLabel->setText(tr("%1/%2 pages · %3 flagged · %4 failed · %5 pages/min · ETA %6")
                                 .arg(s.pagesDone).arg(s.total).arg(s.flagged).arg(s.failed)
                                 .arg(s.pagesPerMinute, 0, 'f', 1).arg(duration(s.etaSeconds)));
    if (s.pagesDone > 0) m_chart->addSample(s.pagesDone, s.pagesPerMinute, s.residentMiB);
}

void MainWindow::onPageFinished(qint64 pageId, int, const QString&, bool) {
    if (!m_store) return;
    auto rec = m_store->page(pageId);
    if (!rec) return;
    const bool newRow = m_model->rowOf(pageId) < 0;
    m_model->updatePage(*rec);
    if (newRow) return;
    if (pageId == m_currentPageId) {
        updateFlagNote();
        // The page on screen was just recognised (read again, say): show its text and words, unless
        // the user is typing in it.
        if (!m_editor->hasUnsavedTyping()) {
            m_currentPageId = -1;
            showRow(m_model->rowOf(pageId));
        }
    }
    if (m_currentRow < 0) goToRow(0);
}

void MainWindow::onRunFinished(bool ok, bool cancelled, const QString& message) {
    m_running = false;
    m_model->setRunning(-1);
    if (!ok) showError(tr("The run stopped: %1").arg(message));
    else log(cancelled ? tr("Cancelled: %1. Start again to resume.").arg(message) : tr("Finished: %1").arg(message));
    log(tr("Longest GUI stall during the run: %1 ms").arg(m_longestStallMs));
    reloadPages();
    if (m_currentRow >= 0) {
        const int row = m_currentRow;
        m_currentRow = -1;
        goToRow(row);
    } else {
        goToRow(0);
    }
    updateTitle();
    updateActions();
    emit runFinished(ok);
}

}  // namespace quire::ui
