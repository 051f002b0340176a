// The engine's worker on its own thread: runs a transcription, reports through queued signals.
#include "transcription_worker.h"

#include "quire/core/process_memory.h"

namespace quire::ui {

double residentMiB() { return double(residentBytes()) / (1024.0 * 1024.0); }

TranscriptionWorker::TranscriptionWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<quire::ui::RunRequest>();
    qRegisterMetaType<quire::ui::RunSample>();
}

void TranscriptionWorker::run(const RunRequest& request) {
    m_cancel = false;
    emit started();
    auto store = ProjectStore::open(request.projectPath.toStdString(), ProjectStore::Mode::OpenOrCreate);
    if (!store) {
        emit finished(false, false, QString::fromStdString(store.status().message()));
        return;
    }
    TranscribeParams p = request.params;
    p.inputs.clear();
    for (const QString& in : request.inputs) p.inputs.emplace_back(in.toStdString());
    p.cancel = &m_cancel;
    p.pause = &m_pause;
    p.onLog = [this](const std::string& m) { emit logMessage(QString::fromStdString(m), true); };
    p.onText = [this](int64_t pageId, const std::string& piece) {
        emit textStreamed(pageId, QString::fromStdString(piece), false);
    };
    p.onPageStarted = [this](int64_t pageId) { emit pageStarted(pageId); };
    p.onPage = [this](const PageEvent& e) {
        if (!e.text.empty()) emit textStreamed(e.page.id, QString::fromStdString(e.text), true);
        if (!e.failure.empty())
            emit logMessage(tr("Page %1 failed: %2").arg(e.page.sequence).arg(QString::fromStdString(e.failure)), true);
        emit pageFinished(e.page.id, e.page.sequence, QString::fromLatin1(pageStatusName(e.page.status)), e.page.flagged);
    };
    p.onProgress = [this](const RunProgress& r) {
        RunSample s;
        s.pagesDone = r.done + r.failed;
        s.total = r.total;
        s.failed = r.failed;
        s.flagged = r.flagged;
        s.pagesPerMinute = r.pagesPerMinute;
        s.etaSeconds = r.etaSeconds;
        s.residentMiB = residentMiB();
        emit progress(s);
    };
    auto summary = runTranscription(**store, p);
    if (!summary) {
        emit finished(false, false, QString::fromStdString(summary.status().message()));
        return;
    }
    const auto& s = *summary;
    emit finished(true, s.cancelled,
                  tr("%1 of %2 pages done, %3 flagged, %4 failed").arg(s.done).arg(s.total).arg(s.flagged).arg(s.failed));
}

}  // namespace quire::ui
