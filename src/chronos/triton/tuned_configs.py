"""Tuned compile configs (#28, action space v3): for one kernel, the Triton compile config (block sizes,
num_warps, num_stages, maxnreg) that was measured faster than its stock one, bit-exact, deployed by
changing the config before Triton compiles (chronos.triton.deploy_configs), not by swapping PTX.

They live in the tuned DB file beside the tuned PTX, in a table of their own (`configs`), append-only and
checksummed per row like it (chronos.triton.tuned_db): a re-tune appends, the newest row of a key wins.
The key is the kernel's function and its source (sha256 of the JIT function's text: Inductor's generated
code, or the user's function), the GPU, and the torch and Triton versions; an entry also records the stock
config it was measured against, and deploys only where the launch would have used exactly that one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from chronos.triton.tuned_db import TunedDB, TunedDBError, _json, _now, _sqlite_errors, check_ratio
from chronos.triton.tuned_db import show as show_ptx

SCHEMA = """
CREATE TABLE IF NOT EXISTS configs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    function TEXT NOT NULL,
    source_sha256 TEXT NOT NULL,
    gpu TEXT NOT NULL,
    torch TEXT NOT NULL,
    triton TEXT NOT NULL,
    stock TEXT NOT NULL,
    tuned TEXT NOT NULL,
    ratio REAL NOT NULL,
    ci_low REAL NOT NULL,
    ci_high REAL NOT NULL,
    verification TEXT NOT NULL,
    provenance TEXT NOT NULL,
    created_at TEXT NOT NULL,
    row_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS configs_by_key ON configs (key, id);
CREATE TRIGGER IF NOT EXISTS configs_no_update BEFORE UPDATE ON configs
    BEGIN SELECT RAISE(ABORT, 'the tuned DB is append-only'); END;
CREATE TRIGGER IF NOT EXISTS configs_no_delete BEFORE DELETE ON configs
    BEGIN SELECT RAISE(ABORT, 'the tuned DB is append-only'); END;
"""


@dataclass(frozen=True)
class ConfigKey:
    function: str
    source_sha256: str
    gpu: str
    torch: str
    """"" for a plain Triton kernel (no Inductor)."""
    triton: str

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class KernelConfig:
    """What Triton compiles a kernel with, besides its source and arguments."""

    kwargs: dict
    """The constexprs the config sets (XBLOCK, R0_BLOCK, BLOCK_SIZE...)."""
    num_warps: int
    num_stages: int
    maxnreg: int | None = None

    def to_json(self) -> dict:
        return {"kwargs": dict(sorted(self.kwargs.items())), "num_warps": self.num_warps,
                "num_stages": self.num_stages, "maxnreg": self.maxnreg}

    @staticmethod
    def from_json(d: dict) -> KernelConfig:
        return KernelConfig(dict(d["kwargs"]), int(d["num_warps"]), int(d["num_stages"]),
                            None if d.get("maxnreg") is None else int(d["maxnreg"]))

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self.kwargs.items())]
        parts += [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"]
        return ",".join(parts + ([f"maxnreg={self.maxnreg}"] if self.maxnreg else []))


@dataclass(frozen=True)
class ConfigEntry:
    key: ConfigKey
    stock: KernelConfig
    tuned: KernelConfig
    ratio: float
    """Tuned time / stock time, side by side (below 1 = faster); `ci` its interval."""
    ci: tuple[float, float]
    verification: dict
    """{"bit_exact": True, ...}, or bit_exact False with the tolerance its tune was run with (the only
    non-bit-exact entries that deploy)."""
    provenance: dict = field(default_factory=dict)
    created_at: str = ""
    id: int | None = None


_KEY_COLS = tuple(f.name for f in fields(ConfigKey))
_COLS = ("key", *_KEY_COLS, "stock", "tuned", "ratio", "ci_low", "ci_high", "verification", "provenance",
         "created_at")


def _row_digest(row: dict) -> str:
    return hashlib.sha256(json.dumps([row[c] for c in _COLS], allow_nan=False).encode()).hexdigest()


def _check(stock: KernelConfig, tuned: KernelConfig, ratio: float, ci, verification) -> None:
    if stock == tuned:
        raise TunedDBError("a tuned config must differ from its stock config")
    check_ratio(ratio, ci)
    if not isinstance(verification, dict) or "bit_exact" not in verification:
        raise TunedDBError("a tuned config needs its verification record ({'bit_exact': ..., ...})")


def put_config(db: TunedDB, key: ConfigKey, stock: KernelConfig, tuned: KernelConfig, ratio: float, ci,
               verification: dict, provenance: dict | None = None) -> ConfigEntry:
    """Append a tuned config; it supersedes any earlier row of the same key."""
    _check(stock, tuned, ratio, ci, verification)
    row = {"key": key.key(), **asdict(key), "stock": _json(stock.to_json(), "stock config"),
           "tuned": _json(tuned.to_json(), "tuned config"), "ratio": float(ratio), "ci_low": float(ci[0]),
           "ci_high": float(ci[1]), "verification": _json(verification, "verification"),
           "provenance": _json(dict(provenance or {}), "provenance"), "created_at": _now()}
    row["row_sha256"] = _row_digest(row)
    cols = (*_COLS, "row_sha256")
    with _sqlite_errors(db.path, "write to"):
        db.db.executescript(SCHEMA)
        cur = db.db.execute(f"INSERT INTO configs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                            [row[c] for c in cols])
        db.db.commit()
    return _entry(db, {"id": cur.lastrowid, **row})


def config_entries(db: TunedDB) -> list[ConfigEntry]:
    """The newest tuned config of every key, oldest first ([] for a DB that holds none)."""
    with _sqlite_errors(db.path, "read"):
        has = db.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'configs'"
                            ).fetchone()
        if has is None:
            return []
        cols = ("id", *_COLS, "row_sha256")
        rows = db.db.execute(f"SELECT {', '.join(cols)} FROM configs WHERE id IN "
                             "(SELECT MAX(id) FROM configs GROUP BY key) ORDER BY id").fetchall()
    return [_entry(db, dict(zip(cols, r, strict=True))) for r in rows]


def _entry(db: TunedDB, d: dict) -> ConfigEntry:
    """A row -> ConfigEntry, refusing one whose checksum or key does not match its content."""
    try:
        ok = _row_digest(d) == d["row_sha256"]
        key = ConfigKey(**{c: d[c] for c in _KEY_COLS})
        ok = ok and key.key() == d["key"]
        stock, tuned = (KernelConfig.from_json(json.loads(d[c])) for c in ("stock", "tuned"))
        verification, provenance = json.loads(d["verification"]), json.loads(d["provenance"])
    except (TypeError, ValueError, KeyError) as e:
        raise TunedDBError(f"tuned DB {db.path}: config row {d.get('id')} cannot be read: {e}") from None
    if not ok:
        raise TunedDBError(f"tuned DB {db.path}: config row {d['id']} fails its checksum or key (a flipped "
                           "bit, or edited by hand): restore the file or write it again")
    return ConfigEntry(key, stock, tuned, d["ratio"], (d["ci_low"], d["ci_high"]), verification, provenance,
                       d["created_at"], d["id"])


def show_configs(entries: list[ConfigEntry]) -> list[str]:
    """Lines for `chronos tuned show`: kernel, stock -> tuned config, ratio [interval], exactness, GPU."""
    if not entries:
        return []
    rows = [("kernel", "stock config -> tuned config", "time ratio [CI]", "outputs", "gpu")]
    for e in entries:
        exact = "bit-exact" if e.verification.get("bit_exact") else \
            f"tolerance {e.verification.get('tolerance', '?')}"
        rows.append((e.key.function, f"{e.stock.label()} -> {e.tuned.label()}",
                     f"{e.ratio:.3f} [{e.ci[0]:.3f}, {e.ci[1]:.3f}]", exact, e.key.gpu))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return ["", *lines, f"{len(entries)} tuned config(s)"]


def show(path: str | Path) -> str:
    """`chronos tuned show`: the tuned PTX entries, then the tuned configs."""
    with TunedDB(path, readonly=True) as db:
        configs = config_entries(db)
    return "\n".join([show_ptx(path), *show_configs(configs)])
