#!/usr/bin/python3
"""Decoding several volumes together (DecodeSession::stepBatch) against one at a time, side by side
in one run: `quire-cli bench decode --mode srswa` at batch 1 and larger, per shape and thread
count, printing tokens/s (all the batch's tokens) and the ratio to batch 1 of the same shape and
threads. On the CPU each weight matrix is read once a step for the whole batch; a GPU run
(--device cuda) puts the batch's sessions on one shared device.

    /usr/bin/python3 tools/bench/decode_batch.py [--quire-cli build/app/quire-cli] [--device cpu]
        [--shapes reader unlimited-ocr] [--batches 1 4 16] [--threads 1 2] [--pages 10]
"""
import argparse
import json
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quire-cli", default="build/app/quire-cli")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shapes", nargs="+", default=["reader", "unlimited-ocr"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 4, 16])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--tokens-per-page", type=int, default=16)
    args = ap.parse_args()
    rows = []
    for shape in args.shapes:
        for threads in args.threads:
            base = None
            for batch in args.batches:
                cmd = [args.quire_cli, "bench", "decode", "--mode", "srswa", "--shape", shape, "--device", args.device,
                       "--pages", str(args.pages), "--batch", str(batch), "--threads", str(threads),
                       "--tokens-per-page", str(args.tokens_per_page), "--json"]
                t0 = time.time()
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{' '.join(cmd)}: exit {out.returncode}: {out.stderr.strip()}")
                r = json.loads(out.stdout.strip().splitlines()[-1])
                print(json.dumps(r), flush=True)
                tps = r["tokensPerSecond"]
                base = base or tps
                rows.append((shape, threads, batch, tps, tps / base, r["peakKvBytes"], time.time() - t0))
    print(f"\n{'shape':<14} {'threads':>7} {'batch':>5} {'tokens/s':>9} {'x batch 1':>9} {'KV MB':>8} {'wall s':>7}")
    for shape, threads, batch, tps, ratio, kv, wall in rows:
        print(f"{shape:<14} {threads:>7} {batch:>5} {tps:>9.1f} {ratio:>9.2f} {kv / 1e6:>8.0f} {wall:>7.0f}")


if __name__ == "__main__":
    main()
