"""The measurement store: SQLite in WAL mode, append-only (INSERT only; triggers refuse UPDATE and DELETE).

One row per measurement, keyed by kernel, ptx_sha256, cubin_sha256, gpu, driver, ptxas version and the
measurement config hash. The latest row wins for a key; stages resume from it, the replay backend answers
from it (read-only), and `latest_by_cubin` lets identical SASS be measured only once.

Every open runs `PRAGMA quick_check` (a damaged b-tree can return altered rows without any error) and every
SQLite error becomes a StoreError naming the file; the atlas uses the same `open_sqlite` and `sqlite_errors`.
Every row carries `row_sha256`, a checksum over all its columns, verified whenever it is read: a flipped bit
that still decodes as a valid number (which quick_check cannot see) is an error naming the file and row.
Schema 2 (`PRAGMA user_version`); a schema-1 store is refused with the command that rewrites it
(`python -m chronos.measure.store_upgrade PATH`). A writer leaves the file in rollback-journal mode when it
closes, so that read-only opens of a committed store create no `-wal`/`-shm` files beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from chronos.errors import StoreError

SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kernel TEXT NOT NULL,
    ptx_sha256 TEXT NOT NULL,
    cubin_sha256 TEXT NOT NULL,
    gpu TEXT NOT NULL,
    driver TEXT NOT NULL,
    ptxas TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    actions TEXT NOT NULL,
    cycles_median REAL, cycles_iqr REAL,
    time_ms_median REAL, time_ms_iqr REAL,
    registers INTEGER, spills INTEGER,
    valid INTEGER NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    log TEXT NOT NULL DEFAULT '',
    extra TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    row_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS by_ptx ON measurements (kernel, ptx_sha256, config_hash);
CREATE INDEX IF NOT EXISTS by_cubin ON measurements (cubin_sha256, config_hash);
CREATE TRIGGER IF NOT EXISTS no_update BEFORE UPDATE ON measurements
    BEGIN SELECT RAISE(ABORT, 'measurements are append-only'); END;
CREATE TRIGGER IF NOT EXISTS no_delete BEFORE DELETE ON measurements
    BEGIN SELECT RAISE(ABORT, 'measurements are append-only'); END;
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kernel TEXT NOT NULL,
    contenders_key TEXT NOT NULL,
    timing_hash TEXT NOT NULL,
    gpu TEXT NOT NULL,
    driver TEXT NOT NULL,
    ptxas TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    row_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS by_contenders ON comparisons (kernel, contenders_key, timing_hash);
CREATE TRIGGER IF NOT EXISTS no_update_cmp BEFORE UPDATE ON comparisons
    BEGIN SELECT RAISE(ABORT, 'comparisons are append-only'); END;
CREATE TRIGGER IF NOT EXISTS no_delete_cmp BEFORE DELETE ON comparisons
    BEGIN SELECT RAISE(ABORT, 'comparisons are append-only'); END;
"""
SCHEMA_VERSION = 2


@dataclass
class Record:
    """One measurement (a row). `extra` holds sample counts and other details as JSON."""

    kernel: str
    ptx_sha256: str
    cubin_sha256: str
    gpu: str
    driver: str
    ptxas: str
    config_hash: str
    actions: tuple[str, ...]
    valid: bool
    reason: str = ""
    log: str = ""
    cycles_median: float | None = None
    cycles_iqr: float | None = None
    time_ms_median: float | None = None
    time_ms_iqr: float | None = None
    registers: int | None = None
    spills: int | None = None
    extra: dict = field(default_factory=dict)
    created_at: str = ""
    id: int | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        d["actions"] = list(self.actions)
        return d


MEASUREMENT_COLS = (
    "kernel", "ptx_sha256", "cubin_sha256", "gpu", "driver", "ptxas", "config_hash", "actions",
    "cycles_median", "cycles_iqr", "time_ms_median", "time_ms_iqr", "registers", "spills", "valid", "reason",
    "log", "extra", "created_at")
CMP_COLS = ("kernel", "contenders_key", "timing_hash", "gpu", "driver", "ptxas", "body", "created_at")
_REAL = {"cycles_median", "cycles_iqr", "time_ms_median", "time_ms_iqr"}
_INT = {"registers", "spills", "valid"}


def canonical(col: str, value):
    """The value as SQLite stores and returns it (so that the checksum of what is written equals the checksum
    of what is read): REAL columns as float, NaN as NULL (SQLite's own conversion), INTEGER columns as int."""
    if value is None:
        return None
    if col in _REAL:
        value = float(value)
        return None if math.isnan(value) else value
    return int(value) if col in _INT else value


def row_checksum(table: str, values: list) -> str:
    """sha256 over a row's columns (without its id, which SQLite assigns on insert); floats by repr, exact."""
    return hashlib.sha256(json.dumps([table, *values], separators=(",", ":")).encode()).hexdigest()


def open_sqlite(path: Path, what: str, *, readonly: bool, table: str | None, **kw) -> sqlite3.Connection:
    """Connect to `path` (read-only through a `mode=ro` URI, so that reading never writes, not even a schema
    into an empty file) and check it: quick_check must pass and `table`, if given, must exist (an empty or
    truncated file has none). Raises StoreError naming the file."""
    try:
        if readonly:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, **kw)
        else:
            db = sqlite3.connect(str(path), **kw)
    except sqlite3.Error as e:
        raise StoreError(f"cannot open {what} {path}: {e}") from e
    try:
        with sqlite_errors(path, what):
            problems = [r[0] for r in db.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise StoreError(f"{what} {path} is damaged (PRAGMA quick_check: "
                                 f"{'; '.join(problems)[:300]}); restore it from its committed copy")
            if table and db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                    (table,)).fetchone() is None:
                raise StoreError(f"{what} {path} has no table {table!r} (an empty or truncated file?)")
    except StoreError:
        db.close()
        raise
    return db


@contextlib.contextmanager
def sqlite_errors(path: Path, what: str, doing: str = "read"):
    """SQLite errors in the block (a damaged page met while reading rows, say) -> StoreError naming it."""
    try:
        yield
    except sqlite3.Error as e:
        raise StoreError(f"cannot {doing} {what} {path}: {type(e).__name__}: {e}") from e


def now_stamp() -> str:
    """The store's timestamp form (UTC, microseconds): comparable as text with every created_at."""
    return _now()


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class Store:
    """Thread-safe handle on one store file (one connection, serialised by a lock). `readonly`: for replay,
    which must not create the file, its schema or anything else in it."""

    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(path)
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = open_sqlite(self.path, "measurement store", readonly=readonly,
                              table="measurements" if readonly else None,
                              check_same_thread=False, timeout=60)
        self.readonly = readonly
        try:
            self._check_schema()
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self.db.commit()
        except sqlite3.Error as e:
            self.db.close()
            raise StoreError(f"cannot open measurement store {self.path}: {e}") from e
        except StoreError:
            self.db.close()
            raise
        self.lock = threading.Lock()

    def _check_schema(self) -> None:
        """A store with rows but an older schema (no row checksums) is refused with the command that
        rewrites it; an empty or new file takes the current schema."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        has_rows = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                                   "'measurements'").fetchone() is not None
        if has_rows and version < SCHEMA_VERSION:
            raise StoreError(f"measurement store {self.path} has schema {version or 1} (rows without "
                             f"checksums); rewrite it once with `python -m chronos.measure.store_upgrade "
                             f"{self.path}`")
        if version > SCHEMA_VERSION:
            raise StoreError(f"measurement store {self.path} has schema {version}, newer than this Chronos "
                             f"({SCHEMA_VERSION}); update Chronos")

    def journal_mode(self) -> str:
        with sqlite_errors(self.path, "measurement store"):
            return self.db.execute("PRAGMA journal_mode").fetchone()[0]

    def insert(self, rec: Record) -> Record:
        rec.created_at = rec.created_at or _now()
        row = asdict(rec)
        row["actions"] = json.dumps(list(rec.actions))
        row["extra"] = json.dumps(rec.extra, sort_keys=True)
        row["valid"] = int(bool(rec.valid))
        values = [canonical(c, row[c]) for c in MEASUREMENT_COLS]
        cols = (*MEASUREMENT_COLS, "row_sha256")
        with self.lock:
            try:
                cur = self.db.execute(
                    f"INSERT INTO measurements ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [*values, row_checksum("measurements", values)])
                self.db.commit()
            except sqlite3.Error as e:
                raise StoreError(f"cannot write to {self.path}: {e}") from e
        rec.id = cur.lastrowid
        return rec

    def _verified(self, table: str, rid: int, values: list, stored: str) -> None:
        if row_checksum(table, values) != stored:
            raise StoreError(f"measurement store {self.path}: {table} row {rid} fails its checksum (a value "
                             f"changed on disk); restore the file from its committed copy")

    def _rows(self, where: str, params: list) -> list[Record]:
        with self.lock, sqlite_errors(self.path, "measurement store"):
            rows = self.db.execute(f"SELECT id, {', '.join(MEASUREMENT_COLS)}, row_sha256 FROM measurements "
                                   f"WHERE {where} ORDER BY id DESC", params).fetchall()
        out = []
        for r in rows:
            self._verified("measurements", r[0], list(r[1:-1]), r[-1])
            d = dict(zip(("id", *MEASUREMENT_COLS), r[:-1], strict=True))
            try:
                d["actions"] = tuple(json.loads(d["actions"]))
                d["extra"] = json.loads(d["extra"])
            except ValueError as e:  # a damaged value that still decodes as text
                raise StoreError(f"cannot read measurement store {self.path}: record {d['id']}: {e}") from e
            d["valid"] = bool(d["valid"])
            out.append(Record(**d))
        return out

    @staticmethod
    def _filters(config_hash: str, gpu: str | None, ptxas: str | None) -> tuple[str, list]:
        where, params = "config_hash = ?", [config_hash]
        if gpu is not None:
            where, params = where + " AND gpu = ?", [*params, gpu]
        if ptxas is not None:
            where, params = where + " AND ptxas = ?", [*params, ptxas]
        return where, params

    def latest(self, kernel: str, ptx_sha256: str, config_hash: str, *, gpu: str | None = None,
               ptxas: str | None = None) -> Record | None:
        """The newest record for (kernel, PTX, config), optionally on one GPU / ptxas version."""
        where, params = self._filters(config_hash, gpu, ptxas)
        rows = self._rows(f"kernel = ? AND ptx_sha256 = ? AND {where}", [kernel, ptx_sha256, *params])
        return rows[0] if rows else None

    def latest_by_cubin(self, cubin_sha256: str, config_hash: str, *, kernel: str | None = None,
                        gpu: str | None = None) -> Record | None:
        """The newest record of a cubin (identical SASS): a measured result is never measured again."""
        where, params = self._filters(config_hash, gpu, None)
        if kernel is not None:
            where, params = where + " AND kernel = ?", [*params, kernel]
        rows = self._rows(f"cubin_sha256 = ? AND {where}", [cubin_sha256, *params])
        return rows[0] if rows else None

    def insert_comparison(self, kernel: str, contenders_key: str, timing_hash: str, prov: dict,
                          body: dict) -> str:
        """Append one side-by-side comparison (chronos.measure.comparison); returns its created_at."""
        now = _now()
        values = [kernel, contenders_key, timing_hash, prov["gpu"], prov["driver"], prov["ptxas"],
                  json.dumps(body, sort_keys=True), now]
        with self.lock:
            try:
                self.db.execute(f"INSERT INTO comparisons ({', '.join(CMP_COLS)}, row_sha256) VALUES "
                                f"({', '.join('?' * (len(CMP_COLS) + 1))})",
                                [*values, row_checksum("comparisons", values)])
                self.db.commit()
            except sqlite3.Error as e:
                raise StoreError(f"cannot write to {self.path}: {e}") from e
        return now

    def latest_comparison(self, kernel: str, contenders_key: str, timing_hash: str, *,
                          gpu: str | None = None, not_after: str | None = None) -> tuple[dict, dict] | None:
        """(body, {gpu, driver, ptxas, created_at}) of the newest comparison with this key (on `gpu`; created
        at `not_after` or before), or None (also for a store made before comparisons existed)."""
        sql = (f"SELECT id, {', '.join(CMP_COLS)}, row_sha256 FROM comparisons WHERE kernel = ? AND "
               "contenders_key = ? AND timing_hash = ?")
        params = [kernel, contenders_key, timing_hash]
        if gpu is not None:
            sql, params = sql + " AND gpu = ?", [*params, gpu]
        if not_after is not None:
            sql, params = sql + " AND created_at <= ?", [*params, not_after]
        with self.lock, sqlite_errors(self.path, "measurement store"):
            if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'comparisons'"
                               ).fetchone() is None:
                return None
            row = self.db.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        self._verified("comparisons", row[0], list(row[1:-1]), row[-1])
        got = dict(zip(CMP_COLS, row[1:-1], strict=True))
        try:
            body = json.loads(got["body"])
        except ValueError as e:
            raise StoreError(f"cannot read measurement store {self.path}: comparison of {kernel}: {e}") from e
        return body, {k: got[k] for k in ("gpu", "driver", "ptxas", "created_at")}

    def all(self) -> list[Record]:
        return list(reversed(self._rows("1 = 1", [])))

    def close(self) -> None:
        """A writer checkpoints the WAL and returns the file to rollback-journal mode (if no other connection
        holds it), so that the file alone is the store and read-only opens create nothing beside it."""
        with self.lock:
            if not self.readonly:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("PRAGMA busy_timeout = 0")  # another writer: leave WAL, do not wait
                    self.db.execute("PRAGMA journal_mode=DELETE")
            self.db.close()
