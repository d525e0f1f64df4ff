"""The atlas plan: every legal action set of a kernel, mapped to the SASS it assembles to.

Building the plan (CPU only, `build_kernel_plan`): enumerate every legal set (chronos.search.space), emit its
PTX, assemble it with ptxas and key the result by its *SASS key* (chronos.sass). Sets with one SASS key are
one variant on the GPU, so the measurement (chronos.stages.atlas) measures one representative per key: on
gemm_tile about 6,000 sets collapse to a few hundred to a few thousand SASS variants, because cubins differ in
metadata (a `.maxnreg` that ptxas did not need to honour, say) where their machine code does not.

The plan lives in a compact SQLite file (`data/store/atlas.sqlite`, schema below) beside the measurement
store; `AtlasDB` reads and writes it. The replay backend answers a set the measurements lack through it
(chronos.search.atlas_replay): (kernel, set) -> SASS variant -> the representative's measurement. Each set
keeps the first 8 bytes of its PTX sha256, so a transform that changed since the plan was built shows up as
a miss rather than as a stale answer. Each kernel's rows (its plan and measurements) carry one digest
(`digests`), written with them and verified when the kernel is first looked up: a value changed on disk is
an error naming the file and kernel, not a silently different answer.
"""

from __future__ import annotations

import calendar
import concurrent.futures as cf
import contextlib
import hashlib
import json
import time
from pathlib import Path

from chronos.actions import ACTION_INDEX, ACTION_NAMES
from chronos.errors import AtlasError
from chronos.kernels.spec import load_module
from chronos.kernels.variant import sha256_text
from chronos.measure.store import open_sqlite, sqlite_errors
from chronos.ptx import emit
from chronos.ptx.ir import Module
from chronos.sass import Assembled, assemble_key
from chronos.search.space import canonical, enumerate_sets

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels (
    id INTEGER PRIMARY KEY, kernel TEXT UNIQUE NOT NULL, root_ptx_sha256 TEXT NOT NULL,
    sets INTEGER NOT NULL, variants INTEGER NOT NULL, refused INTEGER NOT NULL, seconds REAL NOT NULL);
CREATE TABLE IF NOT EXISTS variants (
    kernel_id INTEGER NOT NULL, variant INTEGER NOT NULL, sass8 INTEGER NOT NULL, rep_mask INTEGER NOT NULL,
    registers INTEGER NOT NULL, spills INTEGER NOT NULL, PRIMARY KEY (kernel_id, variant)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS measured (
    kernel_id INTEGER NOT NULL, variant INTEGER NOT NULL, valid INTEGER NOT NULL, reason TEXT NOT NULL,
    cycles_median REAL, cycles_iqr REAL, time_ms_median REAL, time_ms_iqr REAL, cubin8 INTEGER,
    measured_at INTEGER NOT NULL, log TEXT NOT NULL, PRIMARY KEY (kernel_id, variant)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sets (
    kernel_id INTEGER NOT NULL, mask INTEGER NOT NULL, ptx8 INTEGER NOT NULL, variant INTEGER NOT NULL,
    PRIMARY KEY (kernel_id, mask)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refusals (kernel_id INTEGER NOT NULL, mask INTEGER NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (kernel_id, mask)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS digests (kernel_id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL);
"""
_KERNEL_ROWS = (  # what a kernel's digest covers, each in key order
    "SELECT kernel, root_ptx_sha256, sets, variants, refused, seconds FROM kernels WHERE id = ?",
    "SELECT * FROM variants WHERE kernel_id = ? ORDER BY variant",
    "SELECT * FROM measured WHERE kernel_id = ? ORDER BY variant",
    "SELECT * FROM sets WHERE kernel_id = ? ORDER BY mask",
    "SELECT * FROM refusals WHERE kernel_id = ? ORDER BY mask",
)
REFUSED = -1
"""`sets.variant` of a set whose PTX ptxas refused (a register budget it cannot meet); see `refusals`."""
_WHAT = "atlas plan"


def mask_of(actions) -> int:
    """Bit i set for ACTION_NAMES[i] (stop never appears)."""
    m = 0
    for a in canonical(actions):
        m |= 1 << ACTION_INDEX[a]
    return m


def actions_of(mask: int) -> tuple[str, ...]:
    return canonical(a for i, a in enumerate(ACTION_NAMES) if mask >> i & 1)


def ptx8(sha256_hex: str) -> int:
    """The first 8 bytes of a sha256 as a signed 64-bit integer (SQLite's INTEGER): enough to tell the
    variants of one kernel apart and to catch drift, at an eighth of the size of the hex digest."""
    return int.from_bytes(bytes.fromhex(sha256_hex[:16]), "big", signed=True)


def build_kernel_plan(root: Module, arch: str, executor: cf.Executor, ptxas: str | None = None,
                      chunksize: int = 16) -> list[tuple[int, Assembled]]:
    """(mask, Assembled) for every legal set of `root`, in enumeration order (the empty set first)."""
    masks, texts = [], []
    for acts, module in enumerate_sets(root):
        masks.append(mask_of(acts))
        texts.append(emit(module))
    done = executor.map(assemble_key, texts, [arch] * len(texts), [ptxas] * len(texts), chunksize=chunksize)
    return list(zip(masks, done, strict=True))


class AtlasDB:
    """The plan file. Writes are per kernel, in one transaction each, so an interrupted build resumes.
    `readonly` opens it through a read-only connection (replay); any SQLite error is a StoreError."""

    def __init__(self, path: str | Path, *, create: bool = False, readonly: bool = False):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise AtlasError(f"atlas plan {self.path} does not exist",
                             repro=f"python -m chronos.stages.atlas_plan --out {self.path}")
        self.db = open_sqlite(self.path, _WHAT, readonly=readonly and not create,
                              table=None if create else "meta")
        if create:
            with sqlite_errors(self.path, _WHAT, "write"):
                self.db.executescript(SCHEMA)
        self._ids: dict[str, int] = {}

    def _all(self, sql: str, params=()) -> list[tuple]:
        with sqlite_errors(self.path, _WHAT):
            return self.db.execute(sql, params).fetchall()

    def _one(self, sql: str, params=()) -> tuple | None:
        with sqlite_errors(self.path, _WHAT):
            return self.db.execute(sql, params).fetchone()

    @contextlib.contextmanager
    def _transaction(self):
        with sqlite_errors(self.path, _WHAT, "write"), self.db:
            yield self.db

    def set_meta(self, **kv) -> None:
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in kv.items()])

    def meta(self) -> dict[str, str]:
        return dict(self._all("SELECT key, value FROM meta"))

    def has(self, kernel: str) -> bool:
        return self.kernel_id(kernel) is not None

    def kernel_id(self, kernel: str) -> int | None:
        """The kernel's id, its rows verified against their digest the first time it is looked up."""
        if kernel not in self._ids:
            row = self._one("SELECT id FROM kernels WHERE kernel = ?", (kernel,))
            if row is None:
                return None
            self._verify(kernel, row[0])
            self._ids[kernel] = row[0]
        return self._ids[kernel]

    def _digest(self, kid: int) -> str:
        h = hashlib.sha256()
        for sql in _KERNEL_ROWS:
            h.update(json.dumps(self.db.execute(sql, (kid,)).fetchall(), separators=(",", ":")).encode())
        return h.hexdigest()

    def _seal(self, kid: int) -> None:
        """(Inside a write transaction.) The kernel's digest over its rows as they now stand."""
        self.db.execute("INSERT OR REPLACE INTO digests VALUES (?, ?)", (kid, self._digest(kid)))

    def _verify(self, kernel: str, kid: int) -> None:
        with sqlite_errors(self.path, _WHAT):
            if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'digests'").fetchone() is None:
                raise AtlasError(f"atlas plan {self.path} has no digests (made before they existed): seal it "
                                 f"once with `python -m chronos.search.atlas_records seal {self.path}`")
            row = self.db.execute("SELECT sha256 FROM digests WHERE kernel_id = ?", (kid,)).fetchone()
            ok = row is not None and row[0] == self._digest(kid)
        if not ok:
            raise AtlasError(f"atlas plan {self.path}: the rows of {kernel} fail their digest (a value "
                             "changed on disk, or written without one): restore it from its committed copy")

    def seal_all(self) -> int:
        """Digest every kernel's rows as they stand (an atlas made before digests); returns the kernels."""
        with self._transaction() as db:
            db.executescript(SCHEMA)  # adds the digests table
            kids = [r[0] for r in db.execute("SELECT id FROM kernels ORDER BY id").fetchall()]
            for kid in kids:
                self._seal(kid)
        return len(kids)

    def kernels(self) -> list[dict]:
        cols = ("id", "kernel", "root_ptx_sha256", "sets", "variants", "refused", "seconds")
        return [dict(zip(cols, r)) for r in self._all(f"SELECT {', '.join(cols)} FROM kernels ORDER BY id")]

    def add_kernel(self, kernel: str, root_ptx_sha256: str, plan: list[tuple[int, Assembled]],
                   seconds: float) -> None:
        """Number the SASS variants in order of first appearance; the representative of a variant is its
        set with the fewest actions (ties: first in enumeration order)."""
        first: dict[str, int] = {}
        reps: dict[int, tuple[int, Assembled]] = {}
        rows, refusals = [], []
        for mask, a in plan:
            if a.refused:
                rows.append((mask, ptx8(a.ptx_sha256), REFUSED))
                refusals.append((mask, a.refused))
                continue
            v = first.setdefault(a.sass_key, len(first))
            if v not in reps or mask.bit_count() < reps[v][0].bit_count():
                reps[v] = (mask, a)
            rows.append((mask, ptx8(a.ptx_sha256), v))
        with self._transaction() as db:
            cur = db.execute(
                "INSERT INTO kernels (kernel, root_ptx_sha256, sets, variants, refused, seconds) "
                "VALUES (?,?,?,?,?,?)",
                (kernel, root_ptx_sha256, len(plan), len(first), len(refusals), round(seconds, 2)))
            kid = cur.lastrowid
            db.executemany("INSERT INTO sets VALUES (?, ?, ?, ?)", [(kid, *r) for r in rows])
            db.executemany("INSERT INTO refusals VALUES (?, ?, ?)", [(kid, *r) for r in refusals])
            db.executemany(
                "INSERT INTO variants VALUES (?, ?, ?, ?, ?, ?)",
                [(kid, v, ptx8(a.sass_key), m, a.registers, a.spills) for v, (m, a) in sorted(reps.items())])
            self._seal(kid)

    def representatives(self, kernel: str) -> list[tuple[int, tuple[str, ...]]]:
        """(variant, representative action set) for every SASS variant of the kernel."""
        rows = self._all("SELECT variant, rep_mask FROM variants WHERE kernel_id = ? ORDER BY variant",
                         (self._need(kernel),))
        return [(v, actions_of(m)) for v, m in rows]

    def variant_of(self, kernel: str, actions, ptx_sha256: str) -> int | None:
        """The SASS variant of this set (REFUSED if ptxas refused it), or None if the kernel is not in the
        plan. Raises AtlasError when the set is not in the plan or its PTX differs from the plan's."""
        kid = self.kernel_id(kernel)
        if kid is None:
            return None
        row = self._one("SELECT ptx8, variant FROM sets WHERE kernel_id = ? AND mask = ?",
                        (kid, mask_of(actions)))
        label = f"{kernel} [{'+'.join(canonical(actions)) or 'baseline'}]"
        if row is None:
            raise AtlasError(f"{label}: not a legal set in the atlas plan {self.path}")
        if row[0] != ptx8(ptx_sha256):
            raise AtlasError(f"{label}: PTX {ptx_sha256[:16]} differs from the atlas plan's (transforms "
                             f"changed since the plan was built?)",
                             repro=f"python -m chronos.stages.atlas_plan --out {self.path}")
        return row[1]

    def refusal(self, kernel: str, actions) -> str:
        row = self._one("SELECT reason FROM refusals WHERE kernel_id = ? AND mask = ?",
                        (self._need(kernel), mask_of(actions)))
        return row[0] if row else ""

    def record(self, kernel: str, measurements: list[tuple[int, dict]]) -> None:
        """Store SASS variants' measurements, (variant, dict with the store Record's fields), in one commit.
        Each keeps its record's `created_at` (now, for a dict without one)."""
        kid = self._need(kernel)
        rows = []
        for variant, m in measurements:
            cubin = m.get("cubin_sha256") or ""
            rows.append((kid, variant, int(bool(m["valid"])), m.get("reason") or "", m.get("cycles_median"),
                         m.get("cycles_iqr"), m.get("time_ms_median"), m.get("time_ms_iqr"),
                         ptx8(cubin) if cubin else None, epoch_of(m.get("created_at")),
                         "" if m["valid"] else (m.get("log") or "")[:2000]))
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO measured VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            self._seal(kid)

    def measured(self, kernel: str) -> dict[int, dict]:
        """variant -> its measurement, for the variants measured so far."""
        cols = ("variant", "valid", "reason", "cycles_median", "cycles_iqr", "time_ms_median", "time_ms_iqr",
                "cubin8", "measured_at", "log")
        rows = self._all(f"SELECT {', '.join(cols)} FROM measured WHERE kernel_id = ?", (self._need(kernel),))
        return {r[0]: dict(zip(cols, r)) for r in rows}

    def set_cycles(self, kernel: str) -> dict[int, float]:
        """mask -> median cycles of every set whose variant is measured and valid."""
        return dict(self._all(
            "SELECT s.mask, m.cycles_median FROM sets s JOIN measured m ON m.kernel_id = s.kernel_id "
            "AND m.variant = s.variant WHERE s.kernel_id = ? AND m.valid = 1", (self._need(kernel),)))

    def resources(self, kernel: str) -> dict[int, tuple[int, int]]:
        """variant -> (registers, spills) of its representative, as ptxas reported them."""
        return {v: (r, sp) for v, r, sp in self._all(
            "SELECT variant, registers, spills FROM variants WHERE kernel_id = ?", (self._need(kernel),))}

    def variant_sets(self, kernel: str) -> dict[int, list[int]]:
        """variant -> the masks of every set that assembles to it (REFUSED -> the refused sets)."""
        out: dict[int, list[int]] = {}
        for m, v in self._all("SELECT mask, variant FROM sets WHERE kernel_id = ?", (self._need(kernel),)):
            out.setdefault(v, []).append(m)
        return out

    def set_variants(self, kernel: str) -> dict[int, int]:
        """mask of every set -> its variant (the inverse of variant_sets)."""
        return dict(self._all("SELECT mask, variant FROM sets WHERE kernel_id = ?", (self._need(kernel),)))

    def _need(self, kernel: str) -> int:
        kid = self.kernel_id(kernel)
        if kid is None:
            raise AtlasError(f"{kernel}: not in the atlas plan {self.path}",
                             repro=f"python -m chronos.stages.atlas_plan --out {self.path}")
        return kid

    def close(self) -> None:
        self.db.close()


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def epoch_of(stamp: str | None) -> int:
    """Seconds since the epoch of a store timestamp (`2026-11-30T16:45:01.563411Z`); now if there is none."""
    if not stamp:
        return int(time.time())
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


def plan_kernels(db: AtlasDB, selected, arch: str, jobs: int, ptxas: str | None = None) -> None:
    """Add the plan of every selected (family, specs.json, spec) kernel not yet in `db` (a rerun resumes)."""
    with cf.ProcessPoolExecutor(jobs) as ex:
        for _, specs_json, spec in selected:
            if db.has(spec.kernel):
                continue
            t0 = time.perf_counter()
            root = load_module(specs_json, spec)
            plan = build_kernel_plan(root, arch, ex, ptxas)
            db.add_kernel(spec.kernel, sha256_text(emit(root)), plan, time.perf_counter() - t0)
            k = next(r for r in db.kernels() if r["kernel"] == spec.kernel)
            print(f"atlas_plan: {spec.kernel}: {k['sets']} sets -> {k['variants']} SASS variants, "
                f"{k['refused']} refused by ptxas ({k['seconds']:.0f} s)", flush=True)

