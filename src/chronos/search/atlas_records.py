"""Carry atlas measurements between machines: export a GPU run's full records compactly, merge them into a
plan file elsewhere (the plan file itself is too large to bring back from a device call).

    python -m chronos.search.atlas_records export SCRATCH_STORE OUT.jsonl.gz
    python -m chronos.search.atlas_records merge RECORDS.jsonl.gz data/store/atlas.sqlite
    python -m chronos.search.atlas_records seal data/store/atlas.sqlite  # a plan made before digests

A record names its kernel, canonical action set and PTX sha256; merging maps it to the plan's SASS variant
(and refuses a record whose PTX differs from the plan's), keeping the record's own measurement time.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from chronos.measure.store import open_sqlite, sqlite_errors
from chronos.search.atlas_plan import AtlasDB

_COLS = ("kernel", "actions", "valid", "reason", "cycles_median", "cycles_iqr", "time_ms_median",
         "time_ms_iqr", "cubin_sha256", "created_at", "ptx_sha256")


def export(store_path: str, out_path: str) -> int:
    path = Path(store_path)
    db = open_sqlite(path, "measurement store", readonly=True, table="measurements")
    with sqlite_errors(path, "measurement store"):
        rows = db.execute(f"SELECT {', '.join(_COLS)}, CASE WHEN valid THEN '' ELSE substr(log, 1, 2000) END "
                          "FROM measurements ORDER BY id").fetchall()
    db.close()
    with gzip.open(out_path, "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return len(rows)


def merge(records_path: str, plan_path: str) -> int:
    db = AtlasDB(plan_path)
    by: dict[str, list] = {}
    stamps = []
    with gzip.open(records_path, "rt") as f:
        lines = f.read().splitlines()
    for line in lines:
        *vals, log = json.loads(line)
        m = dict(zip(_COLS, vals), log=log)
        acts = tuple(json.loads(m["actions"]))
        by.setdefault(m["kernel"], []).append((db.variant_of(m["kernel"], acts, m["ptx_sha256"]), m))
        stamps.append(m["created_at"])
    for kernel, rows in by.items():
        db.record(kernel, rows)  # each row keeps its record's created_at
    if stamps:
        db.set_meta(measured_last=max(db.meta().get("measured_last", ""), max(stamps)[:19] + "Z"))
    db.close()
    return sum(len(r) for r in by.values())


def seal(plan_path: str) -> int:
    """Digest every kernel's rows of a plan made before digests existed (trusting them as they are)."""
    db = AtlasDB(plan_path)
    try:
        return db.seal_all()
    finally:
        db.close()


if __name__ == "__main__":
    cmd, *paths = sys.argv[1:4]
    if cmd == "seal":
        print(f"atlas_records seal: {seal(paths[0])} kernels sealed")
    else:
        n = export(*paths) if cmd == "export" else merge(*paths)
        print(f"atlas_records {cmd}: {n} records")
