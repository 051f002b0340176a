// quire-server's routes. Every answer is JSON except exports, metrics and the event stream; an
// error is {"error": "..."} naming what was wrong with the request.
#include "http_api.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <fstream>
#include <memory>

#include <spdlog/spdlog.h>

namespace fs = std::filesystem;

namespace quire::server {

namespace {

const char* kJson = "application/json";

std::string compact(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString(); }

void sendError(httplib::Response& res, int status, const std::string& message) {
    res.status = status;
    res.set_content(compact(QJsonObject{{"error", QString::fromStdString(message)}}), kJson);
}

void sendRefusal(httplib::Response& res, const Refusal& r, ServerMetrics& metrics) {
    metrics.refused(r.reason);
    res.set_header("Retry-After", std::to_string(r.retryAfterSeconds));
    sendError(res, r.httpStatus, r.message);
}

// The HTTP status for an engine error: the client's input (4xx) or the server (500).
int statusFor(const Status& s) {
    switch (s.code()) {
        case ErrorCode::UnsupportedFormat: return 415;
        case ErrorCode::TooLarge: return 413;
        case ErrorCode::NotFound: return 404;
        default: return isInputError(s.code()) ? 422 : 500;
    }
}

bool sameToken(const std::string& a, const std::string& b) {
    // Constant time in the length of the expected token: the comparison does not say how much matched.
    unsigned diff = unsigned(a.size() ^ b.size());
    for (size_t i = 0; i < b.size(); ++i) diff |= unsigned(static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ static_cast<unsigned char>(b[i]));
    return diff == 0;
}

QJsonObject viewJson(const JobView& v) {
    QJsonArray formats;
    for (const auto f : v.request.formats) formats.append(exportFormatName(f));
    QJsonObject o{{"id", QString::fromStdString(v.id)},
                  {"state", jobStateName(v.state)},
                  {"engine", QString::fromStdString(v.request.engine)},
                  {"lang", QString::fromStdString(v.request.languages)},
                  {"formats", formats},
                  {"created", QString::fromStdString(v.created)},
                  {"pages", v.pages},
                  {"done", v.done},
                  {"failed", v.failed},
                  {"flagged", v.flagged},
                  {"pagesPerMinute", v.pagesPerMinute},
                  {"etaSeconds", v.etaSeconds}};
    if (!v.finished.empty()) o["finished"] = QString::fromStdString(v.finished);
    if (!v.error.empty()) o["error"] = QString::fromStdString(v.error);
    if (v.queuePosition > 0) o["queuePosition"] = v.queuePosition;
    return o;
}

// The multipart form of POST /v1/jobs and /v1/transcribe: `file` parts, or a `path` under the
// input folder; `lang`, `engine`, `formats`. Nothing is written here.
Result<std::pair<std::vector<JobInput>, JobRequest>> readForm(const httplib::Request& req, const ServerOptions& options) {
    if (!req.is_multipart_form_data())
        return Status(ErrorCode::InvalidArgument, "send a multipart/form-data body (curl -F file=@book.pdf)");
    std::vector<JobInput> inputs;
    JobRequest request;
    for (const auto& [name, part] : req.files) {
        if (name == "file") {
            if (part.content.empty()) return Status(ErrorCode::InvalidArgument, "the upload " + part.filename + " is empty");
            inputs.push_back(JobInput{part.filename.empty() ? "upload" : part.filename, part.content, {}});
        } else if (name == "path") {
            if (options.inputDir.empty()) return Status(ErrorCode::InvalidArgument, "this server takes no 'path' inputs (no --input-dir)");
            std::error_code ec;
            const fs::path p = fs::weakly_canonical(options.inputDir / part.content, ec);
            const std::string root = options.inputDir.string() + "/";
            if (ec || p.string().rfind(root, 0) != 0)
                return Status(ErrorCode::InvalidArgument, "path " + part.content + " is not under the server's input folder");
            if (!fs::is_regular_file(p, ec)) return Status(ErrorCode::NotFound, "path " + part.content + ": no such file in the input folder");
            inputs.push_back(JobInput{part.content, {}, p});
        } else if (name == "lang") {
            request.languages = part.content;
        } else if (name == "engine") {
            request.engine = part.content;
        } else if (name == "formats") {
            auto f = parseExportFormats(part.content);
            if (!f) return f.status();
            request.formats = *f;
        } else {
            return Status(ErrorCode::InvalidArgument, "unknown form field '" + name + "' (file, path, lang, engine, formats)");
        }
    }
    if (inputs.empty()) return Status(ErrorCode::InvalidArgument, "no input: send one or more 'file' parts or a 'path' field");
    const auto engines = availableEngines();
    if (request.engine != "auto" && std::find(engines.begin(), engines.end(), request.engine) == engines.end())
        return Status(ErrorCode::InvalidArgument, "unknown engine '" + request.engine + "' (tesseract, ppocr, reader or auto)");
    for (const char c : request.languages)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+')
            return Status(ErrorCode::InvalidArgument, "lang takes Tesseract language names joined by '+' (eng, deu+frk, chi_sim)");
    if (Status s = checkTesseractLanguages(request.languages); !s) return Status(ErrorCode::InvalidArgument, s.message());
    return std::make_pair(std::move(inputs), std::move(request));
}

const char* contentTypeOf(ExportFormat f) {
    switch (f) {
        case ExportFormat::Markdown: return "text/markdown; charset=utf-8";
        case ExportFormat::Docx: return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
        case ExportFormat::Text: return "text/plain; charset=utf-8";
        case ExportFormat::Hocr: return "text/html; charset=utf-8";
        case ExportFormat::Alto:
        case ExportFormat::PageXml: return "application/zip";
        case ExportFormat::Pdf: return "application/pdf";
    }
    return "application/octet-stream";
}

// Admission, then the form, then the job: refused work costs nothing but the upload. Nothing
// when the answer (a refusal, an error) is already in `res`.
std::optional<JobView> submitForm(const httplib::Request& req, httplib::Response& res, bool sync, JobBoard& board,
                                  ServerMetrics& metrics, const ServerOptions& options) {
    if (auto refusal = board.admission()) {
        sendRefusal(res, *refusal, metrics);
        return std::nullopt;
    }
    auto form = readForm(req, options);
    if (!form) {
        metrics.refused("bad_input");
        sendError(res, form.status().code() == ErrorCode::NotFound ? 404 : 400, form.status().message());
        return std::nullopt;
    }
    form->second.sync = sync;
    std::optional<Refusal> refused;
    auto job = board.submit(form->first, form->second, &refused);
    if (refused) {
        sendRefusal(res, *refused, metrics);
        return std::nullopt;
    }
    if (!job) {
        if (statusFor(job.status()) < 500) metrics.refused("bad_input");
        sendError(res, statusFor(job.status()), job.status().message());
        return std::nullopt;
    }
    return *job;
}

// The token on every call but the health checks, httplib's own errors as JSON, a log line per call.
void installGuards(httplib::Server& server, ServerMetrics& metrics, const ServerOptions& options) {
    const std::string token = options.token;
    server.set_pre_routing_handler([token, &metrics](const httplib::Request& req, httplib::Response& res) {
        if (req.path == "/healthz" || req.path == "/readyz") return httplib::Server::HandlerResponse::Unhandled;
        const std::string auth = req.get_header_value("Authorization");
        if (auth.rfind("Bearer ", 0) != 0 || !sameToken(auth.substr(7), token)) {
            metrics.refused("unauthorized");
            res.set_header("WWW-Authenticate", "Bearer");
            sendError(res, 401, auth.empty() ? "this call needs 'Authorization: Bearer TOKEN'" : "the token is not this server's");
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // httplib's own errors (413 for a body over the limit, 404 for an unknown route) get a message too.
    server.set_error_handler(httplib::Server::HandlerWithResponse([&metrics, &options](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 413) {
            metrics.refused("too_large");
            sendError(res, 413, "the request body is over this server's limit of " + std::to_string(options.maxBodyBytes >> 20) + " MiB");
        } else if (res.status == 404) {
            sendError(res, 404, "no such endpoint: " + req.method + " " + req.path + " (docs/API.md)");
        } else {
            sendError(res, res.status, "HTTP " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
        spdlog::info("{} {} {}", req.method, req.path, res.status);
    });
}

void installHealthRoutes(httplib::Server& server, JobBoard& board, ServerMetrics& metrics) {
    server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    server.Get("/readyz", [&board](const httplib::Request&, httplib::Response& res) {
        const std::string why = board.unreadiness();
        if (!why.empty()) res.status = 503;
        res.set_content((why.empty() ? std::string("ready") : why) + "\n", "text/plain");
    });
    server.Get("/metrics", [&board, &metrics](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics.prometheusText(board.snapshot()), "text/plain; version=0.0.4");
    });
}

// Jobs in (async and sync), their state, cancel, pages.
void installJobRoutes(httplib::Server& server, JobBoard& board, ServerMetrics& metrics, const ServerOptions& options) {
    server.Post("/v1/jobs", [&board, &metrics, &options](const httplib::Request& req, httplib::Response& res) {
        auto job = submitForm(req, res, false, board, metrics, options);
        if (!job) return;
        res.status = 202;
        res.set_header("Location", "/v1/jobs/" + job->id);
        res.set_content(compact(viewJson(*job)), kJson);
    });
    server.Get("/v1/jobs", [&board](const httplib::Request&, httplib::Response& res) {
        QJsonArray jobs;
        for (const auto& v : board.list()) jobs.append(viewJson(v));
        res.set_content(compact(QJsonObject{{"jobs", jobs}}), kJson);
    });
    server.Get(R"(/v1/jobs/([0-9a-f]{16}))", [&board](const httplib::Request& req, httplib::Response& res) {
        const auto v = board.view(req.matches[1]);
        if (!v) return sendError(res, 404, "no job " + std::string(req.matches[1]));
        res.set_content(compact(viewJson(*v)), kJson);
    });
    server.Delete(R"(/v1/jobs/([0-9a-f]{16}))", [&board](const httplib::Request& req, httplib::Response& res) {
        if (!board.cancel(req.matches[1])) return sendError(res, 404, "no job " + std::string(req.matches[1]));
        res.set_content(compact(viewJson(*board.view(req.matches[1]))), kJson);
    });
    server.Get(R"(/v1/jobs/([0-9a-f]{16})/pages/(\d{1,9}))", [&board](const httplib::Request& req, httplib::Response& res) {
        const int n = std::stoi(req.matches[2]);
        auto page = board.pagesJson(req.matches[1], n, n);
        if (!page) return sendError(res, statusFor(page.status()), page.status().message());
        res.set_content(compact(page->first().toObject()), kJson);
    });
    // Synchronous: the job is read at once (through the same queue) and answered with its pages.
    server.Post("/v1/transcribe", [&board, &metrics, &options](const httplib::Request& req, httplib::Response& res) {
        auto job = submitForm(req, res, true, board, metrics, options);
        if (!job) return;
        const auto v = board.waitFinished(job->id, options.syncWaitSeconds);
        if (!v || v->state == JobState::Queued || v->state == JobState::Running) {
            board.cancel(job->id);
            // Cancelled before a worker took it, the job is finished now and no worker will remove
            // it; a running one is removed by its worker when it stops (JobBoard::run).
            board.remove(job->id);
            return sendError(res, 504, "the pages were not read within " + std::to_string(options.syncWaitSeconds) +
                                           " seconds; send long documents to POST /v1/jobs");
        }
        QJsonObject o = viewJson(*v);
        auto pages = v->pages > 0 ? board.pagesJson(job->id, 1, v->pages) : Result<QJsonArray>(QJsonArray());
        o["results"] = pages ? *pages : QJsonArray();
        o.remove("id");
        board.remove(job->id);
        if (v->state == JobState::Failed) res.status = 500;
        res.set_content(compact(o), kJson);
    });
}

// What a job gives back: its export files and its stream of page events.
void installOutputRoutes(httplib::Server& server, JobBoard& board) {
    server.Get(R"(/v1/jobs/([0-9a-f]{16})/export)", [&board](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        if (!board.view(id)) return sendError(res, 404, "no job " + id);
        auto formats = parseExportFormats(req.get_param_value("format"));
        if (!req.has_param("format") || !formats || formats->size() != 1)
            return sendError(res, 400, "export takes one format: ?format=md, docx, txt, alto, page, hocr or pdf");
        const ExportFormat format = formats->front();
        auto file = board.exportFile(id, format);
        if (!file) return sendError(res, file.status().code() == ErrorCode::InvalidArgument ? 409 : statusFor(file.status()),
                                    file.status().message());
        auto in = std::make_shared<std::ifstream>(*file, std::ios::binary);
        std::error_code ec;
        const size_t size = size_t(fs::file_size(*file, ec));
        if (!*in || ec) return sendError(res, 500, "cannot read the export");
        res.set_header("Content-Disposition", "attachment; filename=\"" + id + "." + file->filename().string().substr(5) + "\"");
        res.set_content_provider(size, contentTypeOf(format), [in](size_t offset, size_t length, httplib::DataSink& sink) {
            std::vector<char> buf(std::min<size_t>(length, 1 << 20));
            in->seekg(std::streamoff(offset));
            in->read(buf.data(), std::streamsize(buf.size()));
            const auto got = size_t(in->gcount());
            return got > 0 && sink.write(buf.data(), got);
        });
    });
    // Server-sent events: one "page" event per finished page (earlier ones first), then "end".
    server.Get(R"(/v1/jobs/([0-9a-f]{16})/events)", [&board](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        if (!board.view(id)) return sendError(res, 404, "no job " + id);
        auto sent = std::make_shared<size_t>(0);
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [&board, id, sent](size_t, httplib::DataSink& sink) {
            bool finished = false, found = false;
            const auto events = board.events(id, *sent, 1000, &finished, &found);
            for (const auto& e : events) {
                const std::string msg = "event: page\ndata: " + e + "\n\n";
                if (!sink.write(msg.data(), msg.size())) return false;
                ++*sent;
            }
            if (finished || !found) {
                const auto v = board.view(id);
                const std::string end = "event: end\ndata: " + (v ? compact(viewJson(*v)) : std::string("{}")) + "\n\n";
                sink.write(end.data(), end.size());
                sink.done();
            } else if (events.empty()) {
                const std::string ping = ": waiting\n\n";  // keeps proxies from closing an idle stream
                if (!sink.write(ping.data(), ping.size())) return false;
            }
            return true;
        });
    });
}

}  // namespace

void installRoutes(httplib::Server& server, JobBoard& board, ServerMetrics& metrics, const ServerOptions& options) {
    installGuards(server, metrics, options);
    installHealthRoutes(server, board, metrics);
    installJobRoutes(server, board, metrics, options);
    installOutputRoutes(server, board);
}

}  // namespace quire::server
