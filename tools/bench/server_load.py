#!/usr/bin/env python3
"""quire-server under load, on loopback only; stops by itself (fixed request and page counts).

1. Status calls under uploads: 16 threads upload the sample volume (--uploads in all) while 4
   threads make --status-calls GET /v1/jobs/{id} calls: requests/s and p50/p99 latency of both.
2. The reader at 1, 4 and 16 concurrent jobs (--workers 1, 4, 16): the same --pages pages split into
   that many jobs, side by side in one run, each with the jobs decoding as one batch (the server's
   default) and alone (--no-batch): pages/min, text tokens/s (quire_tokens_total), the mean batch
   (drafts per batched decoder pass), peak resident memory of the server (VmHWM), jobs lost
   (submitted but not done: must be 0).

    tools/bench/server_load.py --server build/app/quire-server [--engine reader] [--pages 16]
Prints a Markdown table (docs/BENCHMARKS.md) and writes --json.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOKEN = "server-load-benchmark-token"


class Server:
    def __init__(self, program, data, extra):
        self.log = open(data + ".log", "wb")
        env = dict(os.environ, QUIRE_SERVER_TOKEN=TOKEN)
        self.proc = subprocess.Popen([program, "--data", data, "--port", "0"] + extra, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = re.search(rb"listening on http://127.0.0.1:(\d+)", open(data + ".log", "rb").read())
            if m:
                self.base = f"http://127.0.0.1:{int(m.group(1))}"
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("quire-server did not start: " + open(data + ".log").read())

    def call(self, method, path, body=None, headers=None):
        req = urllib.request.Request(self.base + path, data=body, method=method,
                                     headers=dict({"Authorization": "Bearer " + TOKEN}, **(headers or {})))
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read()

    def peak_rss_mib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.log.close()


def multipart(files, fields):
    boundary = uuid.uuid4().hex
    out = b""
    for name, value in fields.items():
        out += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n".encode()
    for path in files:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{os.path.basename(path)}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + open(path, "rb").read() + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, {"Content-Type": "multipart/form-data; boundary=" + boundary}


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] * 1000 if values else float("nan")


def status_under_uploads(args, work):
    srv = Server(args.server, os.path.join(work, "uploads"), ["--workers", "1", "--max-queue", "100000"])
    try:
        body, headers = multipart([args.sample], {"engine": "tesseract"})
        _, first = srv.call("POST", "/v1/jobs", body, headers)
        job = json.loads(first)["id"]
        upload_times, status_times, errors = [], [], []
        lock = threading.Lock()
        todo = {"uploads": args.uploads, "status": args.status_calls}

        def take(kind):
            with lock:
                if todo[kind] <= 0:
                    return False
                todo[kind] -= 1
                return True

        def uploader():
            while take("uploads"):
                t = time.perf_counter()
                try:
                    srv.call("POST", "/v1/jobs", body, headers)
                    with lock:
                        upload_times.append(time.perf_counter() - t)
                except Exception as e:  # a refusal or a dropped connection is counted, not fatal
                    with lock:
                        errors.append(f"upload: {e}")

        def poller():
            while take("status"):
                t = time.perf_counter()
                try:
                    srv.call("GET", f"/v1/jobs/{job}")
                    with lock:
                        status_times.append(time.perf_counter() - t)
                except Exception as e:
                    with lock:
                        errors.append(f"status: {e}")

        start = time.perf_counter()
        threads = [threading.Thread(target=uploader) for _ in range(16)] + [threading.Thread(target=poller) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        _, listing = srv.call("GET", "/v1/jobs")
        kept = len(json.loads(listing)["jobs"])
        return {"wall_s": wall, "uploads": len(upload_times), "upload_p50_ms": pct(upload_times, 50),
                "upload_p99_ms": pct(upload_times, 99), "uploads_per_s": len(upload_times) / wall,
                "status_calls": len(status_times), "status_per_s": len(status_times) / wall,
                "status_p50_ms": pct(status_times, 50), "status_p99_ms": pct(status_times, 99),
                "errors": errors[:5], "error_count": len(errors), "jobs_kept": kept, "jobs_accepted": len(upload_times) + 1,
                "peak_rss_mib": srv.peak_rss_mib()}
    finally:
        srv.stop()


def counter(srv, name):
    _, text = srv.call("GET", "/metrics")
    m = re.search(rb"^" + name.encode() + rb" (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def concurrent_jobs(args, work, pages, jobs, batch):
    srv = Server(args.server, os.path.join(work, f"jobs{jobs}{'' if batch else '-alone'}"),
                 ["--workers", str(jobs), "--threads", "1", "--max-queue", "1000"] + ([] if batch else ["--no-batch"]))
    try:
        per_job = [pages[i::jobs] for i in range(jobs)]
        start = time.perf_counter()
        ids = []
        for files in per_job:
            body, headers = multipart(files, {"engine": args.engine, "lang": args.lang})
            status, answer = srv.call("POST", "/v1/jobs", body, headers)
            ids.append(json.loads(answer)["id"])
        done_pages, lost, states = 0, 0, {}
        for job in ids:
            while True:
                _, answer = srv.call("GET", f"/v1/jobs/{job}")
                view = json.loads(answer)
                if view["state"] in ("done", "failed", "cancelled"):
                    break
                time.sleep(0.2)
            states[view["state"]] = states.get(view["state"], 0) + 1
            done_pages += view["done"]
            lost += view["state"] != "done"
        wall = time.perf_counter() - start
        tokens = counter(srv, "quire_tokens_total")
        passes, drafts = counter(srv, "quire_decode_batch_passes_total"), counter(srv, "quire_decode_batch_drafts_total")
        return {"jobs": jobs, "batch": batch, "mean_batch": drafts / passes if passes else 0, "pages": done_pages, "wall_s": wall, "pages_per_min": done_pages * 60 / wall,
                "tokens": tokens, "tokens_per_s": tokens / wall, "jobs_lost": lost, "states": states,
                "peak_rss_mib": srv.peak_rss_mib()}
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=os.path.join(ROOT, "build/app/quire-server"))
    ap.add_argument("--sample", default=os.path.join(ROOT, "resources/samples/sample_volume.pdf"))
    ap.add_argument("--engine", default="reader")
    ap.add_argument("--lang", default="eng")
    ap.add_argument("--pages", type=int, default=16, help="pages read at each concurrency (the sample's, rendered at 300 dpi)")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--uploads", type=int, default=64)
    ap.add_argument("--status-calls", type=int, default=2000)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="quire-server-load-")
    try:
        subprocess.run(["pdftoppm", "-r", "300", "-png", args.sample, os.path.join(work, "page")], check=True)
        rendered = sorted(os.path.join(work, f) for f in os.listdir(work) if f.endswith(".png"))
        pages = [rendered[i % len(rendered)] for i in range(args.pages)]
        result = {"machine": f"{os.cpu_count()} cores", "engine": args.engine,
                  "status_under_uploads": status_under_uploads(args, work),
                  "concurrent": [concurrent_jobs(args, work, pages, int(c), batch)
                                 for c in args.concurrency.split(",") for batch in (True, False)]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    s = result["status_under_uploads"]
    print(f"status calls under 16 concurrent uploads ({s['uploads']} uploads of the sample, {s['wall_s']:.1f} s): "
          f"{s['status_per_s']:.0f} calls/s, p50 {s['status_p50_ms']:.1f} ms, p99 {s['status_p99_ms']:.1f} ms; "
          f"uploads {s['uploads_per_s']:.1f}/s, p50 {s['upload_p50_ms']:.0f} ms, p99 {s['upload_p99_ms']:.0f} ms; "
          f"errors {s['error_count']}; jobs kept {s['jobs_kept']} of {s['jobs_accepted']} accepted; peak RSS {s['peak_rss_mib']:.0f} MiB")
    print()
    print(f"| concurrent {args.engine} jobs | decoding | mean batch | pages | wall s | pages/min | text tokens/s | jobs lost | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in result["concurrent"]:
        print(f"| {c['jobs']} | {'one batch' if c['batch'] else 'alone'} | {c['mean_batch']:.2f} | {c['pages']} | "
              f"{c['wall_s']:.1f} | {c['pages_per_min']:.1f} | {c['tokens_per_s']:.0f} | {c['jobs_lost']} | {c['peak_rss_mib']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    lost = sum(c["jobs_lost"] for c in result["concurrent"]) + (s["jobs_accepted"] - s["jobs_kept"])
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
