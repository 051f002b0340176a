#!/usr/bin/python3
"""The reader over a long generated volume: memory and time per page must stay flat. Generates an
N-page multi-page TIFF (tools/bench/memory_flat.py's pages: 150 dpi letter, ten lines of text),
transcribes it with `quire-cli --engine reader` (one sequence, one worker), samples the process's
resident memory twice a second, and reads each page's commit time from the project. Prints peak
memory and the median seconds per page over the first and the last tenth of the volume, and the
trend over every tenth.

With --light the pages are small (900 x 300 pixels, two lines), so a 1,000-page volume takes
minutes; the run then also reports the decoder's own time per page and the pages it computed
again ($QUIRE_READER_STATS=1), which the front-end's time hides in the page times.

    /usr/bin/python3 tools/bench/reader_volume.py --pages 1000
    /usr/bin/python3 tools/bench/reader_volume.py --pages 1000 --light
"""
import argparse
import bisect
import datetime
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def make_light_volume(path, pages):
    sys.path.insert(0, HERE)
    from memory_flat import make_volume
    make_volume(path, pages, seed=3, size=(900, 300), number_at=(420, 20), text_at=(60, 100), lines=2, words=6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--quire-cli", default=os.path.join(HERE, "..", "..", "build", "app", "quire-cli"))
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="stop the run (SIGINT: a clean cancel) after this long and report the pages done")
    ap.add_argument("--light", action="store_true", help="small two-line pages; report the decoder's own time")
    args = ap.parse_args()
    cli = os.path.abspath(args.quire_cli)
    n = args.pages
    with tempfile.TemporaryDirectory() as tmp:
        vol = os.path.join(tmp, "volume.tif")
        if args.light:
            make_light_volume(vol, n)
        else:
            subprocess.run([sys.executable, os.path.join(HERE, "memory_flat.py"), "--make", vol, str(n)], check=True)
        project = os.path.join(tmp, "volume.quire")
        start = time.time()
        log = open(os.path.join(tmp, "stderr.txt"), "w+")  # a file, not a pipe: a long run's log would fill a pipe
        proc = subprocess.Popen([cli, "transcribe", vol, "--project", project, "--engine", "reader", "--threads", "1"],
                                stdout=subprocess.DEVNULL, stderr=log, text=True,
                                env=dict(os.environ, QUIRE_READER_STATS="1") if args.light else None)
        samples = []  # (unix time, RSS KiB)
        stopped = False
        while proc.poll() is None:
            if args.max_seconds and not stopped and time.time() - start > args.max_seconds:
                proc.send_signal(signal.SIGINT)
                stopped = True
            r = rss_kib(proc.pid)
            if r:
                samples.append((time.time(), r))
            time.sleep(0.5)
        log.seek(0)
        err = log.read()
        if proc.returncode not in (0, 3) and not stopped:
            sys.exit(f"quire-cli failed ({proc.returncode}): {err[-2000:]}")
        db = sqlite3.connect(project)
        stamps = sorted(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
                        for (t,) in db.execute("SELECT created_at FROM results"))
        failed = db.execute("SELECT count(*) FROM pages WHERE status = 'failed'").fetchone()[0]
    if len(stamps) < 20:
        sys.exit(f"only {len(stamps)} pages committed")
    per_page = [b - a for a, b in zip(stamps, stamps[1:])]
    tenth = max(1, len(per_page) // 10)
    # Memory while the first and the last tenth of the pages were read (pages done at each sample).
    def peak(lo, hi):
        vals = [r for t, r in samples if lo <= bisect.bisect_right(stamps, t) < hi]
        return max(vals) / 1024 if vals else float("nan")
    print(f"{n} pages, {len(stamps)} committed ({failed} failed pages), {time.time() - start:.0f} s"
          + (" (stopped by --max-seconds)" if stopped else ""))
    print("| part of the volume | peak RSS (MiB) | median s/page |")
    print("|---|---|---|")
    print(f"| pages 1–{tenth} | {peak(0, tenth):.1f} | {statistics.median(per_page[:tenth]):.3f} |")
    print(f"| pages {len(stamps) - tenth + 1}–{len(stamps)} | {peak(len(stamps) - tenth, len(stamps) + 1):.1f} | "
          f"{statistics.median(per_page[-tenth:]):.3f} |")
    print(f"| whole run | {max(r for _, r in samples) / 1024:.1f} | {statistics.median(per_page):.3f} |")
    stats = [(float(ms), int(again), float(cpu), int(tokens), int(computed)) for ms, again, cpu, tokens, computed in re.findall(
        r"reader stats: decoded in ([\d.]+) ms, (\d+) pages computed again so far, ([\d.]+) ms on the CPU, (\d+) tokens, "
        r"(\d+) computed", err)]
    if stats:
        k = max(1, len(stats) // 10)
        print("decoder, each tenth: median ms/page wall / on its thread's CPU, tokens written / run through the model "
              "per page (pages computed again): " + ", ".join(
                  f"{statistics.median(s[0] for s in stats[i:i + k]):.0f} / {statistics.median(s[2] for s in stats[i:i + k]):.0f}, "
                  f"{statistics.mean(s[3] for s in stats[i:i + k]):.0f} / {statistics.mean(s[4] for s in stats[i:i + k]):.0f} "
                  f"({stats[min(i + k, len(stats)) - 1][1] - (stats[i - 1][1] if i else 0)})"
                  for i in range(0, k * 10, k)))
    # The trend: each tenth of the volume, in order.
    print("each tenth, peak RSS MiB / median s/page: " + ", ".join(
        f"{peak(k * tenth, (k + 1) * tenth):.0f}/{statistics.median(per_page[k * tenth:(k + 1) * tenth]):.2f}"
        for k in range(len(per_page) // tenth)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
