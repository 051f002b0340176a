// Runs the engine on its own thread. Only queued signals cross to the GUI; cancel and pause are
// atomic flags. Text reaches the GUI through textStreamed(): once per page with Tesseract, token by
// token once the reader engine streams.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>

#include "quire/store/project_store.h"
#include "quire/pipeline/transcriber.h"

namespace quire::ui {

struct RunRequest {
    QString projectPath;
    QStringList inputs;  // empty: resume the queued pages
    TranscribeParams params;  // inputs and callbacks are filled in by the worker
};

struct RunSample {
    int pagesDone = 0;
    double pagesPerMinute = 0;
    double residentMiB = 0;  // process memory while the run goes on
    double etaSeconds = -1;
    int total = 0, failed = 0, flagged = 0;
};

class TranscriptionWorker : public QObject {
    Q_OBJECT
public:
    explicit TranscriptionWorker(QObject* parent = nullptr);
    void cancel() { m_cancel = true; }
    void setPaused(bool paused) { m_pause = paused; }
    bool isPaused() const { return m_pause; }

public slots:
    void run(const quire::ui::RunRequest& request);

signals:
    void started();
    void progress(const quire::ui::RunSample& sample);
    void pageStarted(qint64 pageId);
    void pageFinished(qint64 pageId, int sequence, const QString& status, bool flagged);
    void textStreamed(qint64 pageId, const QString& chunk, bool pageComplete);
    void logMessage(const QString& message, bool warning);
    void finished(bool ok, bool cancelled, const QString& message);

private:
    std::atomic<bool> m_cancel{false};
    std::atomic<bool> m_pause{false};
};

double residentMiB();

}  // namespace quire::ui

Q_DECLARE_METATYPE(quire::ui::RunRequest)
Q_DECLARE_METATYPE(quire::ui::RunSample)
