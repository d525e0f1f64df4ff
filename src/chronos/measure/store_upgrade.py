"""Rewrite a schema-1 measurement store (rows without checksums) as schema 2, once:

    python -m chronos.measure.store_upgrade data/store/measurements.sqlite

Every row keeps its id and values; each gains the checksum `Store` verifies on read. The old file must pass
`PRAGMA quick_check`: rows are sealed as they are, so upgrade a store you trust (its committed copy). The new
file replaces the old one atomically; nothing is written if any step fails.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path

from chronos.errors import StoreError
from chronos.measure.store import (
    CMP_COLS,
    MEASUREMENT_COLS,
    SCHEMA_VERSION,
    Store,
    canonical,
    open_sqlite,
    row_checksum,
    sqlite_errors,
)


def _copy(old: sqlite3.Connection, new: sqlite3.Connection, table: str, cols: tuple[str, ...]) -> int:
    exists = old.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    if exists is None:
        return 0  # a store made before comparisons existed
    rows = old.execute(f"SELECT id, {', '.join(cols)} FROM {table} ORDER BY id").fetchall()
    sealed = []
    for rid, *vals in rows:
        values = [canonical(c, v) for c, v in zip(cols, vals, strict=True)]
        sealed.append((rid, *values, row_checksum(table, values)))
    new.executemany(f"INSERT INTO {table} (id, {', '.join(cols)}, row_sha256) VALUES "
                    f"({', '.join('?' * (len(cols) + 2))})", sealed)
    return len(sealed)


def upgrade(path: Path) -> tuple[int, int]:
    """Rewrite `path` in place as the current schema; returns (measurements, comparisons) copied."""
    if not path.is_file():  # sqlite would say only "unable to open database file"
        raise StoreError(f"measurement store {path}: no such file")
    old = open_sqlite(path, "measurement store", readonly=True, table="measurements")
    with sqlite_errors(path, "measurement store"):
        version = old.execute("PRAGMA user_version").fetchone()[0]
    if version >= SCHEMA_VERSION:
        old.close()
        raise StoreError(f"measurement store {path} already has schema {version}; nothing to do")
    tmp = path.with_name(path.name + ".upgrade")
    tmp.unlink(missing_ok=True)
    try:
        Store(tmp).close()  # the current schema, empty
        new = sqlite3.connect(tmp)
        with sqlite_errors(path, "measurement store"), new:
            counts = (_copy(old, new, "measurements", MEASUREMENT_COLS),
                      _copy(old, new, "comparisons", CMP_COLS))
        new.execute("VACUUM")
        new.close()
        old.close()
        os.replace(tmp, path)
    except BaseException:
        old.close()
        tmp.unlink(missing_ok=True)
        raise
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chronos.measure.store_upgrade",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("stores", nargs="+", type=Path, metavar="STORE.sqlite")
    args = ap.parse_args(argv)
    for path in args.stores:
        try:
            n, c = upgrade(path)
        except StoreError as e:
            print(f"store_upgrade: error: {e}", file=sys.stderr)
            return 1
        print(f"store_upgrade: {path}: {n} measurements and {c} comparisons sealed (schema {SCHEMA_VERSION})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
