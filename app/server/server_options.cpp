// quire-server's command line.
#include "server_options.h"

#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace quire::server {

const char* const kServerUsage =
    "usage: quire-server --data DIR [--port N] [--host ADDR] [--token-file F] [--input-dir DIR]\n"
    "                    [--workers N] [--threads N] [--no-batch] [--max-queue N] [--max-pages N] [--sync-max-pages N] [--sync-wait S]\n"
    "                    [--max-body-mb N] [--memory-guard SHARE] [--retain-hours H] [--keep-inputs-hours H]\n"
    "                    [--tls-cert F --tls-key F]\n"
    "                    [--redis HOST:PORT [--worker] [--claim-after S]] [--device cpu|cuda [--gpu-memory MIB]]\n"
    "\n"
    "Quire's engine behind an HTTP API (docs/API.md). Listens on 127.0.0.1 unless --host says otherwise.\n"
    "Every endpoint but /healthz and /readyz needs 'Authorization: Bearer TOKEN'; the token is the first\n"
    "line of --token-file, or QUIRE_SERVER_TOKEN. Jobs live in DIR/jobs and survive a restart.\n";

namespace {

Status usage(const std::string& what) { return Status(ErrorCode::InvalidArgument, what); }

template <typename T>
bool number(const std::string& s, T* out) {
    std::istringstream in(s);
    T v{};
    if (!(in >> v) || !in.eof()) return false;
    *out = v;
    return true;
}

}  // namespace

Result<ServerOptions> parseServerOptions(int argc, char** argv, const char* envToken) {
    ServerOptions o;
    std::map<std::string, std::string> v;
    static const char* kNames[] = {"data", "port", "host", "token-file", "input-dir", "workers", "threads", "max-queue",
                                   "max-pages", "sync-max-pages", "sync-wait", "max-body-mb", "memory-guard",
                                   "retain-hours", "keep-inputs-hours", "tls-cert", "tls-key", "redis", "claim-after", "device", "gpu-memory"};
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0) return usage("unexpected argument '" + a + "'");
        a = a.substr(2);
        if (a == "worker") {
            o.worker = true;
            continue;
        }
        if (a == "no-batch") {
            o.batchReaders = false;
            continue;
        }
        bool known = false;
        for (const char* n : kNames) known = known || a == n;
        if (!known) return usage("unknown option --" + a);
        if (i + 1 >= argc) return usage("--" + a + " needs a value");
        v[a] = argv[++i];
    }
    if (!v.count("data")) return usage("--data DIR is required (jobs are kept there)");
    o.dataDir = v["data"];
    auto integer = [&](const char* name, int lo, int hi, int* out) -> Status {
        if (!v.count(name)) return Status::ok();
        int n = 0;
        if (!number(v[name], &n) || n < lo || n > hi)
            return usage("--" + std::string(name) + " takes a whole number from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + " (got '" + v[name] + "')");
        *out = n;
        return Status::ok();
    };
    for (const auto& [name, lo, hi, out] :
         std::initializer_list<std::tuple<const char*, int, int, int*>>{{"port", 0, 65535, &o.port},
                                                                        {"workers", 1, 256, &o.workers},
                                                                        {"threads", 0, 1024, &o.threadsPerJob},
                                                                        {"max-queue", 0, 1000000, &o.maxQueuedJobs},
                                                                        {"max-pages", 1, 100000000, &o.maxPagesInFlight},
                                                                        {"sync-max-pages", 1, 100000, &o.syncMaxPages},
                                                                        {"sync-wait", 1, 86400, &o.syncWaitSeconds},
                                                                        {"claim-after", 1, 86400, &o.claimAfterSeconds}})
        if (Status s = integer(name, lo, hi, out); !s) return s;
    int bodyMb = int(o.maxBodyBytes >> 20);
    if (Status s = integer("max-body-mb", 1, 1 << 20, &bodyMb); !s) return s;
    o.maxBodyBytes = size_t(bodyMb) << 20;
    if (v.count("memory-guard") && (!number(v["memory-guard"], &o.memoryGuardShare) || o.memoryGuardShare <= 0 ||
                                    o.memoryGuardShare > 1))
        return usage("--memory-guard takes a share of the machine's memory above 0 and up to 1 (got '" + v["memory-guard"] + "')");
    if (v.count("retain-hours") && (!number(v["retain-hours"], &o.retainHours) || o.retainHours < 0))
        return usage("--retain-hours takes hours, 0 or more (got '" + v["retain-hours"] + "')");
    if (v.count("keep-inputs-hours") && (!number(v["keep-inputs-hours"], &o.keepInputsHours) || o.keepInputsHours < 0))
        return usage("--keep-inputs-hours takes hours, 0 or more (got '" + v["keep-inputs-hours"] + "')");
    if (v.count("host")) o.host = v["host"];
    if (v.count("device")) {
        o.device = v["device"];
        if (o.device != "cpu" && o.device != "cuda") return usage("--device takes cpu or cuda (got '" + o.device + "')");
    }
    int gpuMemory = 0;
    if (Status s = integer("gpu-memory", 0, 1 << 24, &gpuMemory); !s) return s;
    o.gpuMemoryMiB = size_t(gpuMemory);
    if (o.gpuMemoryMiB > 0 && o.device != "cuda") return usage("--gpu-memory is for --device cuda");
    if (v.count("redis")) o.redis = v["redis"];
    if (o.worker && o.redis.empty()) return usage("--worker takes jobs from a shared queue: give --redis HOST:PORT");
    if (v.count("input-dir")) {
        std::error_code ec;
        o.inputDir = fs::canonical(v["input-dir"], ec);
        if (ec || !fs::is_directory(o.inputDir)) return usage("--input-dir " + v["input-dir"] + ": not a folder");
    }
    if (v.count("tls-cert") != v.count("tls-key")) return usage("--tls-cert and --tls-key go together");
    if (v.count("tls-cert")) o.tlsCert = v["tls-cert"], o.tlsKey = v["tls-key"];
    if (v.count("token-file")) {
        std::ifstream in(v["token-file"]);
        if (!in) return usage("--token-file " + v["token-file"] + ": cannot read it");
        std::getline(in, o.token);
        while (!o.token.empty() && (o.token.back() == '\r' || o.token.back() == ' ')) o.token.pop_back();
        if (o.token.empty()) return usage("--token-file " + v["token-file"] + ": its first line is empty");
    } else if (envToken && *envToken) {
        o.token = envToken;
    } else {
        return usage("no token: give --token-file F or set QUIRE_SERVER_TOKEN (every call but the health checks needs it)");
    }
    if (o.token.size() < 16) return usage("the token is shorter than 16 characters: too easy to guess");
    return o;
}

}  // namespace quire::server
