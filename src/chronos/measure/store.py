"""The measurement store: SQLite in WAL mode, append-only (INSERT only; triggers refuse UPDATE and DELETE).

One row per measurement, keyed by kernel, ptx_sha256, cubin_sha256, gpu, driver, ptxas version and the
measurement config hash. The latest row wins for a key; stages resume from it, the replay backend answers
from it, and `latest_by_cubin` lets identical SASS be measured only once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from chronos.measure.config import MeasureError

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
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS by_ptx ON measurements (kernel, ptx_sha256, config_hash);
CREATE INDEX IF NOT EXISTS by_cubin ON measurements (cubin_sha256, config_hash);
CREATE TRIGGER IF NOT EXISTS no_update BEFORE UPDATE ON measurements
    BEGIN SELECT RAISE(ABORT, 'measurements are append-only'); END;
CREATE TRIGGER IF NOT EXISTS no_delete BEFORE DELETE ON measurements
    BEGIN SELECT RAISE(ABORT, 'measurements are append-only'); END;
"""


class StoreError(MeasureError):
    """The store cannot be opened or written."""


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


_COLS = ("kernel", "ptx_sha256", "cubin_sha256", "gpu", "driver", "ptxas", "config_hash", "actions",
         "cycles_median", "cycles_iqr", "time_ms_median", "time_ms_iqr", "registers", "spills", "valid",
         "reason", "log", "extra", "created_at")


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class Store:
    """Thread-safe handle on one store file (one connection, serialised by a lock)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=60)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self.db.commit()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open measurement store {self.path}: {e}") from e
        self.lock = threading.Lock()

    def journal_mode(self) -> str:
        return self.db.execute("PRAGMA journal_mode").fetchone()[0]

    def insert(self, rec: Record) -> Record:
        rec.created_at = rec.created_at or _now()
        row = asdict(rec)
        row["actions"] = json.dumps(list(rec.actions))
        row["extra"] = json.dumps(rec.extra, sort_keys=True)
        row["valid"] = int(bool(rec.valid))
        with self.lock:
            try:
                cur = self.db.execute(
                    f"INSERT INTO measurements ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})",
                    [row[c] for c in _COLS])
                self.db.commit()
            except sqlite3.Error as e:
                raise StoreError(f"cannot write to {self.path}: {e}") from e
        rec.id = cur.lastrowid
        return rec

    def _rows(self, where: str, params: list) -> list[Record]:
        with self.lock:
            cur = self.db.execute(f"SELECT id, {', '.join(_COLS)} FROM measurements WHERE {where} ORDER BY id DESC",
                                  params)
            rows = cur.fetchall()
        out = []
        for r in rows:
            d = dict(zip(("id", *_COLS), r, strict=True))
            d["actions"] = tuple(json.loads(d["actions"]))
            d["extra"] = json.loads(d["extra"])
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

    def all(self) -> list[Record]:
        return list(reversed(self._rows("1 = 1", [])))

    def close(self) -> None:
        with self.lock:
            self.db.close()
