#!/usr/bin/python3
"""Writes a reader model's character_counts.tsv (docs/MODEL_FORMAT.md) from the data it was trained
on, for a model trained before train.py wrote the file itself:

    /usr/bin/python3 tools/train/character_counts.py --data data/synth9 \\
        [--add START_MODEL/character_counts.tsv] --out MODEL/character_counts.tsv

The documents are taken as train.py takes them (DATA/docNNNN or DATA/*/docNNNN in sorted order, the
first ones held out and not counted); --add merges the counts of the model training started from
(each character's larger count: docs/MODEL_FORMAT.md).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import Vocab, character_counts, merge_counts, read_counts, write_counts  # noqa: E402
from train import find_documents, held_out_count, load_records  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the folder given to train.py --data")
    ap.add_argument("--add", action="append", default=[], help="another model's character_counts.tsv to merge")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    args = ap.parse_args()
    vocab = Vocab()
    docs = find_documents(args.data, False)
    if not docs:
        sys.exit(f"{args.data}: no documents (docNNNN folders made by make_pages.py)")
    records = load_records(docs, set(), os.path.abspath(args.quire_cli), vocab)
    held = held_out_count(len(records))  # as train.py holds them out
    counts = character_counts(records[held:], vocab)
    for path in args.add:
        if not os.path.exists(path):
            sys.exit(f"{path}: no such file")
        counts = merge_counts(counts, read_counts(path))
    write_counts(args.out, counts)
    rare = sum(1 for c in vocab.chars if counts.get(c, 0) < 30)
    print(f"{args.out}: {len(counts)} characters from {len(records) - held} documents; "
          f"{rare} of the vocabulary's {len(vocab.chars)} seen fewer than 30 times")


if __name__ == "__main__":
    main()
