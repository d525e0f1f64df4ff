"""Append to a measurement store the rows another copy of it gained (two device calls that each started
from the committed store). A row is identified by its content key and creation time, so a merge run twice
adds nothing; rows keep their order (by id in the source).

    python scripts/merge_stores.py data/store/measurements.sqlite /path/to/other/measurements.sqlite
"""

from __future__ import annotations

import sqlite3
import sys

KEYS = {"measurements": ("kernel", "ptx_sha256", "cubin_sha256", "config_hash", "created_at"),
        "comparisons": ("kernel", "contenders_key", "timing_hash", "created_at")}


def merge(target: str, source: str) -> dict[str, int]:
    db = sqlite3.connect(target)
    db.execute("ATTACH DATABASE ? AS src", (source,))
    added = {}
    with db:
        for table, key in KEYS.items():
            cols = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})") if r[1] != "id"]
            match = " AND ".join(f"m.{k} = s.{k}" for k in key)
            before = db.total_changes
            picked = ", ".join("s." + c for c in cols)
            db.execute(f"INSERT INTO main.{table} ({', '.join(cols)}) SELECT {picked} "
                       f"FROM src.{table} s WHERE NOT EXISTS (SELECT 1 FROM main.{table} m WHERE {match}) "
                       "ORDER BY s.id")
            added[table] = db.total_changes - before
    db.execute("DETACH DATABASE src")
    db.close()
    return added


if __name__ == "__main__":
    print(merge(sys.argv[1], sys.argv[2]))
