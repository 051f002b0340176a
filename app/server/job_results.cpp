// A job's results from its project: pages as JSON (GET /v1/jobs/{id}/pages/{n}) and export files
// (GET /v1/jobs/{id}/export), written on first request.
#include "job_board.h"

#include <JlCompress.h>
#include <QJsonArray>
#include <QJsonObject>

#include "board_job.h"
#include "quire/export/exporters.h"
#include "quire/store/project_store.h"

namespace fs = std::filesystem;

namespace quire::server {

Result<QJsonArray> JobBoard::pagesJson(const std::string& id, int first, int last) {
    const auto job = fresh(id);
    if (!job) return Status(ErrorCode::NotFound, "no job " + id);
    auto store = ProjectStore::open(job->project(), ProjectStore::Mode::ReadOnly);
    if (!store) return store.status();
    auto pages = (*store)->pages();
    if (!pages) return pages.status();
    for (const int n : {first, last})
        if (n < 1 || n > int(pages->size()))
            return Status(ErrorCode::NotFound, "job " + id + " has no page " + std::to_string(n) + " (it has " +
                                                   std::to_string(pages->size()) + ")");
    auto box = [](const Box& b) { return QJsonArray{b.x, b.y, b.w, b.h}; };
    QJsonArray out;
    for (int n = first; n <= last; ++n) {
        const PageRecord& page = (*pages)[size_t(n - 1)];
        QJsonObject o{{"page", n},
                      {"status", pageStatusName(page.status)},
                      {"flagged", page.flagged},
                      {"flagReason", QString::fromStdString(page.flagReason)},
                      {"confidence", page.meanConfidence},
                      {"file", QString::fromStdString(job->shown(page.sourceFile))},
                      {"filePage", page.filePage + 1},
                      {"width", page.width},
                      {"height", page.height},
                      {"failure", QString::fromStdString(job->shown(page.failure))}};
        if (page.status == PageStatus::Done) {
            auto text = (*store)->effectiveText(page.id);
            if (!text) return text.status();
            o["text"] = QString::fromStdString(*text);
            auto layout = (*store)->layout(page.id);
            if (!layout) return layout.status();
            QJsonArray lines;
            for (const Line& l : layout->lines) {
                QJsonArray words;
                for (const Word& w : l.words)
                    words.append(QJsonObject{{"text", QString::fromStdString(w.text)}, {"box", box(w.box)}, {"confidence", w.confidence}});
                lines.append(QJsonObject{{"box", box(l.box)}, {"block", l.block}, {"words", words}});
            }
            o["lines"] = lines;
            o["engine"] = QString::fromStdString(layout->engine);
        }
        out.append(o);
    }
    return out;
}

Result<fs::path> JobBoard::exportFile(const std::string& id, ExportFormat format) {
    const auto job = fresh(id);
    if (!job) return Status(ErrorCode::NotFound, "no job " + id);
    {
        std::lock_guard lock(m_mutex);
        if (job->state != JobState::Done)
            return Status(ErrorCode::InvalidArgument, "job " + id + " is " + jobStateName(job->state) +
                                                          "; its export is written once it is done");
    }
    std::lock_guard exporting(job->exportMutex);
    const fs::path outDir = job->dir / "export";
    const std::string ext = exportFormatName(format);
    const bool folder = format == ExportFormat::Alto || format == ExportFormat::PageXml;
    const fs::path file = outDir / ("book." + ext + (folder ? ".zip" : ""));
    std::error_code ec;
    if (fs::exists(file, ec)) return file;
    auto store = ProjectStore::open(job->project(), ProjectStore::Mode::OpenExisting);
    if (!store) return store.status();
    ExportOptions opt;
    opt.outDir = outDir;
    opt.formats = {format};
    auto written = exportProject(**store, opt);
    if (!written) return written.status();
    if (folder) {
        const fs::path dir = outDir / ("book." + ext);
        const fs::path partial = fs::path(file.string() + ".partial");
        if (!JlCompress::compressDir(QString::fromStdString(partial.string()), QString::fromStdString(dir.string())))
            return Status(ErrorCode::Io, file.string() + ": cannot write the zip");
        fs::rename(partial, file, ec);
        if (ec) return Status(ErrorCode::Io, file.string() + ": " + ec.message());
    }
    return file;
}

}  // namespace quire::server
