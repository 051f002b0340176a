// Export in a worker thread with a progress dialog (export_progress.h).
#include "export_progress.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QProgressDialog>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <memory>

#include "quire/store/project_store.h"

namespace quire::ui {

Status exportWithProgress(const std::string& projectPath, ExportOptions options, QWidget* parent) {
    QProgressDialog progress(QCoreApplication::translate("quire::ui::MainWindow", "Exporting the book…"),
                             QCoreApplication::translate("quire::ui::MainWindow", "Cancel"), 0,
                             int(options.formats.size()), parent);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    QObject::connect(&progress, &QProgressDialog::canceled, &progress, [cancel] { *cancel = true; });
    QFuture<Status> future = QtConcurrent::run([projectPath, options, cancel, &progress]() mutable -> Status {
        auto store = ProjectStore::open(projectPath, ProjectStore::Mode::OpenExisting);
        if (!store) return store.status();
        options.cancel = cancel.get();
        options.onProgress = [&progress](int done, int, const std::string&) {
            QMetaObject::invokeMethod(&progress, [&progress, done] { progress.setValue(done); });
        };
        auto r = exportProject(**store, options);
        return r ? Status::ok() : r.status();
    });
    QFutureWatcher<Status> watcher;
    QEventLoop loop;
    QObject::connect(&watcher, &QFutureWatcher<Status>::finished, &loop, &QEventLoop::quit);
    watcher.setFuture(future);
    if (!future.isFinished()) loop.exec();
    progress.setValue(progress.maximum());
    return future.result();
}

}  // namespace quire::ui
