"""The tuned-kernel DB: Chronos-tuned PTX for Triton kernels, looked up at compile time with no measurement.

SQLite, append-only (triggers refuse UPDATE and DELETE) like the measurement store: a re-tune appends a row
and the newest row for a key wins, so the history of what was deployed stays. Every open runs
`PRAGMA quick_check`; deploy opens read-only through a `mode=ro` URI (the file may sit on a read-only
image, which is also why the journal is not WAL: WAL readers need a writable -shm file). Every SQLite error
becomes a TunedDBError naming the file.

The key is strict (`TunedKey`): Triton's compile hash (source, specialisation, constexprs, options, target,
Triton and ptxas versions), the stock PTX, the kernel, the GPU, the driver, the deploying ptxas, the Chronos
version and the action-space version. Anything else would deploy PTX tuned for another situation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Self

from chronos import __version__ as CHRONOS_VERSION
from chronos.actions import V2_NAMES
from chronos.errors import ChronosError
from chronos.kernels.variant import sha256_text

ACTION_SPACE = "v2"
"""The action space whose transforms made the tuned PTX: v2 (the seed's 20, v2's hints, budgets, unrolls)."""

SCHEMA_VERSION = 2
"""2: every row carries `row_sha256` over all its other columns, verified on every read."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS tuned (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    triton_hash TEXT NOT NULL,
    stock_ptx_sha256 TEXT NOT NULL,
    kernel TEXT NOT NULL,
    gpu TEXT NOT NULL,
    driver TEXT NOT NULL,
    ptxas TEXT NOT NULL,
    chronos_version TEXT NOT NULL,
    action_space TEXT NOT NULL,
    actions TEXT NOT NULL,
    ptx TEXT NOT NULL,
    ptx_sha256 TEXT NOT NULL,
    ratio REAL NOT NULL,
    ci_low REAL NOT NULL,
    ci_high REAL NOT NULL,
    verification TEXT NOT NULL,
    provenance TEXT NOT NULL,
    created_at TEXT NOT NULL,
    row_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS by_key ON tuned (key, id);
CREATE TRIGGER IF NOT EXISTS no_update BEFORE UPDATE ON tuned
    BEGIN SELECT RAISE(ABORT, 'the tuned DB is append-only'); END;
CREATE TRIGGER IF NOT EXISTS no_delete BEFORE DELETE ON tuned
    BEGIN SELECT RAISE(ABORT, 'the tuned DB is append-only'); END;
"""


class TunedDBError(ChronosError):
    """The tuned DB cannot be opened, read or written, or an entry is malformed; names the file."""


# ------------------------------------------------------------------ PTX identity
_DEBUG_SECTION = re.compile(r"^[ \t]*\.section[ \t]+\.debug_", re.MULTILINE)
_FILE_DIRECTIVE = re.compile(r"^[ \t]*\.file[ \t].*\n?", re.MULTILINE)
_ENTRY = re.compile(r"^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.entry[ \t]+([A-Za-z_$%][\w$]*)", re.MULTILINE)


def ptx_identity_sha256(ptx: str) -> str:
    """sha256 of PTX without `.file` directives and `.debug_*` sections. Triton writes the kernel's absolute
    source path there, which its own compile hash ignores: hashing it would make a kernel tuned in one
    checkout never hit in another. The code itself (and `.loc` line numbers) stays in the hash."""
    m = _DEBUG_SECTION.search(ptx)
    body = ptx[:m.start()] if m else ptx
    return sha256_text(_FILE_DIRECTIVE.sub("", body))


def entry_names(ptx: str) -> list[str]:
    """The `.entry` names of a PTX module, in order."""
    return _ENTRY.findall(ptx)


# ------------------------------------------------------------------ key and entry
@dataclass(frozen=True)
class TunedKey:
    """Everything that must equal between tuning and deployment for the tuned PTX to be the right one."""

    triton_hash: str
    """Triton's compile hash (`metadata["hash"]`): source, specialisation, constexprs, options, target."""
    stock_ptx_sha256: str
    """`ptx_identity_sha256` of the PTX Triton generated (catches anything the Triton hash misses)."""
    kernel: str
    """The `.entry` name (`metadata["name"]`); the tuned PTX must keep it."""
    gpu: str
    driver: str
    ptxas: str
    """Version of the ptxas that assembles at deployment: Triton's own."""
    chronos_version: str = CHRONOS_VERSION
    action_space: str = ACTION_SPACE

    def __post_init__(self):
        bad = [f.name for f in fields(self) if not isinstance(getattr(self, f.name), str)
               or not getattr(self, f.name)]
        if bad:
            raise TunedDBError(f"TunedKey fields must be non-empty strings: {', '.join(bad)}")

    def key(self) -> str:
        """sha256 of the fields as sorted JSON: the lookup key."""
        return _digest(asdict(self))

    def code_key(self) -> str:
        """The lookup key without `triton_hash`: the stock PTX's identity stands for the code instead. Triton
        3.6's compile hash depends on the process's history, not only on what it compiles: it folds in the
        ptxas version it cached first (`get_ptxas_version` is lru-cached), and Inductor points
        TRITON_PTXAS_PATH at torch's ptxas only after that in a process that compiles in place, but before it
        in its compile workers. The same kernel, byte-identical PTX, got another hash when the H200's e2e run
        compiled it in place than when capture's workers did (2026-12-02, flex triton_poi_fused_zeros_1)."""
        return _digest({k: v for k, v in asdict(self).items() if k != "triton_hash"})

    def differences(self, other: TunedKey) -> dict[str, tuple[str, str]]:
        """field -> (self's value, other's value) for each field that differs: why a lookup missed."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(other, f.name)}


def _digest(fields_: dict) -> str:
    return hashlib.sha256(json.dumps(fields_, sort_keys=True).encode()).hexdigest()


def make_key(triton_hash: str, stock_ptx: str, kernel: str, *, gpu: str, driver: str, ptxas: str) -> TunedKey:
    """The key of a kernel as Triton compiled it (stock PTX) for a deployment environment."""
    return TunedKey(triton_hash=triton_hash, stock_ptx_sha256=ptx_identity_sha256(stock_ptx), kernel=kernel,
                    gpu=gpu, driver=driver, ptxas=ptxas)


@dataclass(frozen=True)
class Entry:
    """One tuned kernel. `ratio` is tuned time / stock time (below 1 = faster), `ci` its interval."""

    key: TunedKey
    actions: tuple[str, ...]
    ptx: str
    ptx_sha256: str
    ratio: float
    ci: tuple[float, float]
    verification: dict
    provenance: dict = field(default_factory=dict)
    created_at: str = ""
    id: int | None = None


_KEY_COLS = tuple(f.name for f in fields(TunedKey))
_COLS = ("key", *_KEY_COLS, "actions", "ptx", "ptx_sha256", "ratio", "ci_low", "ci_high", "verification",
         "provenance", "created_at")
_SUMMED = _COLS
_COLS = (*_COLS, "row_sha256")


def _row_digest(row: dict) -> str:
    """sha256 over every column but the checksum itself (SQLite returns REALs bit for bit, so a read row
    hashes as it was written): a flipped bit anywhere in a row is caught on read, not deployed or shown."""
    return hashlib.sha256(json.dumps([row[c] for c in _SUMMED], allow_nan=False).encode()).hexdigest()


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def _json(value, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TunedDBError(f"{what} is not JSON-serialisable: {e}") from e


def _check_entry(key: TunedKey, actions, ptx: str, ratio: float, ci) -> None:
    """Refuse what could never be deployed: an unknown action, a renamed entry, a meaningless ratio."""
    unknown = [a for a in actions if a not in V2_NAMES]
    if unknown:
        raise TunedDBError(f"unknown actions {unknown} (not in chronos.actions.V2_NAMES)")
    names = entry_names(ptx)
    if names != [key.kernel]:
        raise TunedDBError(f"tuned PTX must define exactly the entry {key.kernel!r}; it defines {names}")
    check_ratio(ratio, ci)


def check_ratio(ratio: float, ci) -> None:
    """A time ratio and its interval that mean something: finite, positive, low <= high."""
    low, high = ci
    if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in (ratio, low, high)) \
            or not low <= high:
        raise TunedDBError(f"ratio {ratio} and interval [{low}, {high}] must be finite and positive, "
                           "low <= high")


# ------------------------------------------------------------------ the DB
class TunedDB:
    """A handle on one tuned DB file. `readonly` (deployment) never creates or writes anything."""

    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(os.path.abspath(path))  # every message names the file wherever the caller ran
        _refuse_non_db(self.path, readonly)
        try:
            if readonly:
                self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                          check_same_thread=False)
            else:
                self.db = sqlite3.connect(str(self.path), check_same_thread=False)
        except sqlite3.Error as e:
            raise TunedDBError(f"cannot open tuned DB {self.path}: {e}") from None
        try:
            self._check(readonly)
        except TunedDBError:
            self.db.close()
            raise

    def _check(self, readonly: bool) -> None:
        """quick_check (a damaged page can return altered rows silently), then the schema and its version."""
        with self._errors("open"):
            problems = [r[0] for r in self.db.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise TunedDBError(f"tuned DB {self.path} is damaged (PRAGMA quick_check: "
                                   f"{'; '.join(problems)[:300]}); restore it from its committed copy")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if not readonly and version == 0:
                self.db.executescript(SCHEMA)
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self.db.commit()
                version = SCHEMA_VERSION
            has_table = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tuned'"
                                        ).fetchone() is not None
        if version != SCHEMA_VERSION or not has_table:
            why = "it is empty: 0 bytes" if self.path.stat().st_size == 0 else "a truncated or foreign file?"
            if has_table and 0 < version < SCHEMA_VERSION:
                why = "an older Chronos wrote it: write it again with chronos tune DIR --merge-only --db NEW"
            raise TunedDBError(f"tuned DB {self.path} has schema version {version} and "
                               f"{'a' if has_table else 'no'} table 'tuned'; this Chronos reads version "
                               f"{SCHEMA_VERSION} ({why})")

    def _errors(self, doing: str):
        return _sqlite_errors(self.path, doing)

    def put(self, key: TunedKey, actions, ptx: str, ratio: float, ci, verification: dict,
            provenance: dict | None = None) -> Entry:
        """Append a tuned kernel; it supersedes any earlier row of the same key."""
        actions = tuple(actions)
        _check_entry(key, actions, ptx, ratio, ci)
        if not isinstance(verification, dict) or not verification:
            raise TunedDBError("an entry needs its verification record (a non-empty dict)")
        entry = Entry(key=key, actions=actions, ptx=ptx, ptx_sha256=sha256_text(ptx), ratio=float(ratio),
                      ci=(float(ci[0]), float(ci[1])), verification=verification,
                      provenance=dict(provenance or {}), created_at=_now())
        row = {"key": key.key(), **asdict(key), "actions": _json(list(actions), "actions"), "ptx": ptx,
               "ptx_sha256": entry.ptx_sha256, "ratio": entry.ratio, "ci_low": entry.ci[0],
               "ci_high": entry.ci[1], "verification": _json(verification, "verification"),
               "provenance": _json(entry.provenance, "provenance"), "created_at": entry.created_at}
        row["row_sha256"] = _row_digest(row)
        with self._errors("write to"):
            cur = self.db.execute(f"INSERT INTO tuned ({', '.join(_COLS)}) "
                                  f"VALUES ({', '.join('?' * len(_COLS))})", [row[c] for c in _COLS])
            self.db.commit()
        return replace(entry, id=cur.lastrowid)

    def _select(self, where: str, params: tuple) -> list[Entry]:
        with self._errors("read"):
            rows = self.db.execute(f"SELECT id, {', '.join(_COLS)} FROM tuned WHERE {where} ORDER BY id",
                                   params).fetchall()
        return [self._entry(dict(zip(("id", *_COLS), r, strict=True))) for r in rows]

    def _entry(self, d: dict) -> Entry:
        """A row -> Entry, refusing a row of the wrong types (SQLite stores what it is given) or whose
        stored key or PTX hash does not match its content."""
        texts = ("key", *_KEY_COLS, "actions", "ptx", "ptx_sha256", "verification", "provenance",
                 "created_at", "row_sha256")
        bad = [c for c in texts if not isinstance(d[c], str)]
        bad += [c for c in ("ratio", "ci_low", "ci_high") if isinstance(d[c], bool)
                or not isinstance(d[c], (int, float)) or not math.isfinite(d[c])]
        if bad:
            raise TunedDBError(f"tuned DB {self.path}: row {d['id']} has values of the wrong type in "
                               f"{', '.join(bad)} (edited by hand or damaged)")
        if _row_digest(d) != d["row_sha256"]:
            raise TunedDBError(f"tuned DB {self.path}: row {d['id']} fails its checksum (a flipped bit, or "
                               "edited by hand): restore the file or write it again from the tune parts")
        key = TunedKey(**{c: d[c] for c in _KEY_COLS})
        if key.key() != d["key"] or sha256_text(d["ptx"]) != d["ptx_sha256"]:
            raise TunedDBError(f"tuned DB {self.path}: row {d['id']} does not match its own key or PTX hash "
                               "(edited by hand or damaged)")
        try:
            actions, verification, provenance = (json.loads(d[c]) for c in ("actions", "verification",
                                                                            "provenance"))
        except ValueError as e:
            raise TunedDBError(f"cannot read tuned DB {self.path}: row {d['id']}: {e}") from e
        return Entry(key=key, actions=tuple(actions), ptx=d["ptx"], ptx_sha256=d["ptx_sha256"],
                     ratio=d["ratio"], ci=(d["ci_low"], d["ci_high"]), verification=verification,
                     provenance=provenance, created_at=d["created_at"], id=d["id"])

    def get(self, key: TunedKey) -> Entry | None:
        """The newest entry for exactly this key, or None."""
        rows = self._select("id = (SELECT MAX(id) FROM tuned WHERE key = ?)", (key.key(),))
        return rows[0] if rows else None

    def entries(self) -> list[Entry]:
        """The newest entry of every key, oldest first."""
        return self._select("id IN (SELECT MAX(id) FROM tuned GROUP BY key)", ())

    def content_hash(self) -> str:
        """sha256 over the live entries' keys and PTX hashes: names Triton's cache directory, so that kernels
        compiled against one DB content are never served from another's (or the stock) cache."""
        return content_hash(self.entries())

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def content_hash(entries: list[Entry]) -> str:
    pairs = sorted((e.key.key(), e.ptx_sha256) for e in entries)
    return hashlib.sha256(json.dumps([SCHEMA_VERSION, pairs]).encode()).hexdigest()


_SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def _refuse_non_db(path: Path, readonly: bool) -> None:
    """One clear TunedDBError for what is no tuned DB at all, before SQLite sees it: SQLite reports a text
    file only at the first query ("file is not a database"), opens a folder as "unable to open database
    file", and reading a pipe would block. An empty file passes: SQLite makes a new DB of it (writable), or
    the schema check names it (readonly)."""
    if path.is_dir():
        raise TunedDBError(f"tuned DB {path} is a folder, not a tuned DB file (chronos tune --db writes one)")
    if path.is_symlink() and not path.exists():
        raise TunedDBError(f"tuned DB {path} is a symbolic link to nothing (dangling, or a loop)")
    if not path.exists():
        if readonly:
            raise TunedDBError(f"tuned DB {path} does not exist")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TunedDBError(f"cannot create the folder of tuned DB {path}: {e.strerror}") from None
        return
    if not path.is_file():
        raise TunedDBError(f"tuned DB {path} is not a regular file (a device, pipe or socket)")
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as e:
        raise TunedDBError(f"cannot read tuned DB {path}: {e.strerror}") from None
    if head and head != _SQLITE_MAGIC:
        raise TunedDBError(f"tuned DB {path} is not an SQLite database (it begins {head!r}); a tuned DB is "
                           "the file chronos tune --db writes")


@contextlib.contextmanager
def _sqlite_errors(path: Path, doing: str):
    """sqlite3 errors in the block -> TunedDBError naming the file (the sqlite3 traceback adds nothing)."""
    try:
        yield
    except sqlite3.Error as e:
        raise TunedDBError(f"cannot {doing} tuned DB {path}: {type(e).__name__}: {e}") from None


RATIO_HEADER = "time ratio tuned/stock [99% CI] (<1 = faster)"
"""show()'s ratio column: says which way the ratio reads (chronos tune prints the same convention)."""


def show(path: str | Path) -> str:
    """A human table of the live entries: kernel, actions, time ratio [interval], GPU, created."""
    with TunedDB(path, readonly=True) as db:
        entries = db.entries()
        digest = content_hash(entries)
    rows = [("kernel", "actions", RATIO_HEADER, "outputs", "gpu", "created")]
    for e in entries:
        v = e.verification
        exact = "bit-exact" if v.get("bit_exact") else f"within {v.get('tolerance')}"
        on = f"{v['config']} + " if v.get("config") else ""  # PTX actions on top of a tuned config's PTX
        rows.append((e.key.kernel, on + ("+".join(e.actions) or "(none)"),
                     f"{e.ratio:.3f} [{e.ci[0]:.3f}, {e.ci[1]:.3f}]", exact, e.key.gpu, e.created_at[:19]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(f"{len(entries)} tuned kernel(s) in {path}; content {digest[:16]}")
    return "\n".join(lines)
