"""Give the part files of a knob stage recorded before parts carried `recorded_at` (2026-12-06) the store
time they were recorded at, so that replay answers them from the comparisons the store held then (stage
knob_sections' pin_part), not from a later stage's timing of the same contenders.

    git show REV:data/store/measurements.sqlite > /tmp/then.sqlite   # the store committed with the parts
    python scripts/stamp_recorded_at.py --store /tmp/then.sqlite --parts data/knob_anchors

A part's recorded_at becomes the newest created_at among its kernel's comparisons in --store (its own were
among them; nothing measured later was). Parts that have one keep it; nothing else in a part changes.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", type=Path, required=True, help="the store as the parts were recorded into it")
    p.add_argument("--parts", type=Path, required=True, help="a stage's parts (<family>/<kernel>.json)")
    args = p.parse_args()
    db = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    stamped = kept = 0
    for path in sorted(args.parts.glob("*/*/*.json")):
        row = json.loads(path.read_text())
        prov = row.setdefault("provenance", {})
        if prov.get("recorded_at"):
            kept += 1
            continue
        (last,) = db.execute("SELECT MAX(created_at) FROM comparisons WHERE kernel = ?",
                             (row["kernel"],)).fetchone()
        if last is None:
            print(f"{path}: no comparison of {row['kernel']} in {args.store}", file=sys.stderr)
            return 1
        prov["recorded_at"] = last
        path.write_text(json.dumps(row, indent=1) + "\n")
        stamped += 1
    print(f"{args.parts}: {stamped} parts stamped, {kept} had recorded_at")
    return 0


if __name__ == "__main__":
    sys.exit(main())
