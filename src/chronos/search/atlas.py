"""The atlas: every legal action set of a kernel, mapped to the SASS it assembles to.

Building the plan (CPU only, `build_kernel_plan`): enumerate every legal set (chronos.search.space), emit its
PTX, assemble it with ptxas and key the result by its *SASS key* (`sass_key`). Sets with one SASS key are one
variant on the GPU, so the measurement (chronos.stages.atlas) measures one representative per key: on
gemm_tile about 6,000 sets collapse to a few hundred to a few thousand SASS variants, because cubins differ in
metadata (a `.maxnreg` that ptxas did not need to honour, say) where their machine code does not.

The plan lives in a compact SQLite file (`data/store/atlas.sqlite`, schema below) beside the measurement
store. The replay backend answers a set the measurements lack through it: (kernel, set) -> SASS variant ->
the representative's measurement. Each set keeps the first 8 bytes of its PTX sha256, so a transform that
changed since the plan was built shows up as a miss rather than as a stale answer.
"""

from __future__ import annotations

import calendar
import concurrent.futures as cf
import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from chronos.actions import ACTION_INDEX, ACTION_NAMES
from chronos.errors import ChronosError, PtxasError
from chronos.measure.config import sha256_text
from chronos.ptx import emit
from chronos.ptx.ir import Module
from chronos.search.space import canonical, enumerate_sets
from chronos.toolchain import assemble, elf_sections

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
"""
REFUSED = -1
"""`sets.variant` of a set whose PTX ptxas refused (a register budget it cannot meet); see `refusals`."""


class AtlasError(ChronosError):
    """The atlas plan is missing, incomplete, or disagrees with the current transforms."""


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


def sass_key(cubin: bytes, entries: dict) -> str:
    """sha256 over what decides how the kernel runs: the machine code (`.text.*`), the constant banks and
    shared-memory sections, and ptxas's resource report (registers, stack frame, spills, shared) per entry.
    Symbol tables, `.nv.info` attributes (e.g. a `.maxnreg` hint that changed nothing) and notes are left out."""
    h = hashlib.sha256()
    for name, body in sorted(elf_sections(cubin).items()):
        if name.startswith((".text.", ".nv.constant", ".nv.shared")):
            h.update(name.encode() + b"\0" + len(body).to_bytes(8, "little") + body)
    for name, res in sorted(entries.items()):
        h.update(repr((name, res)).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Assembled:
    ptx_sha256: str
    sass_key: str = ""
    registers: int = 0
    spills: int = 0
    refused: str = ""  # ptxas's first error line when it refused the PTX


def assemble_key(ptx: str, arch: str, ptxas: str | None = None) -> Assembled:
    """ptxas one set's PTX and key it; a refusal is a result, not an exception (it is part of the atlas)."""
    sha = sha256_text(ptx)
    try:
        res = assemble(ptx, arch, ptxas=ptxas, name="atlas")
    except PtxasError as e:
        return Assembled(sha, refused=str(e).splitlines()[0][:300])
    regs = max((e.registers for e in res.entries.values()), default=0)
    spills = sum(e.spill_stores + e.spill_loads for e in res.entries.values())
    return Assembled(sha, sass_key(res.cubin, res.entries), regs, spills)


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
    """The plan file. Writes are per kernel, in one transaction each, so an interrupted build resumes."""

    def __init__(self, path: str | Path, *, create: bool = False):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise AtlasError(f"atlas plan {self.path} does not exist",
                             repro=f"python -m chronos.stages.atlas_plan --out {self.path}")
        self.db = sqlite3.connect(str(self.path))
        if create:
            self.db.executescript(SCHEMA)
        self._ids: dict[str, int] = {}

    def set_meta(self, **kv) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in kv.items()])

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    def has(self, kernel: str) -> bool:
        return self.kernel_id(kernel) is not None

    def kernel_id(self, kernel: str) -> int | None:
        if kernel not in self._ids:
            row = self.db.execute("SELECT id FROM kernels WHERE kernel = ?", (kernel,)).fetchone()
            if row is None:
                return None
            self._ids[kernel] = row[0]
        return self._ids[kernel]

    def kernels(self) -> list[dict]:
        cols = ("id", "kernel", "root_ptx_sha256", "sets", "variants", "refused", "seconds")
        return [dict(zip(cols, r)) for r in self.db.execute(f"SELECT {', '.join(cols)} FROM kernels ORDER BY id")]

    def add_kernel(self, kernel: str, root_ptx_sha256: str, plan: list[tuple[int, Assembled]], seconds: float) -> None:
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
        with self.db:
            cur = self.db.execute(
                "INSERT INTO kernels (kernel, root_ptx_sha256, sets, variants, refused, seconds) VALUES (?,?,?,?,?,?)",
                (kernel, root_ptx_sha256, len(plan), len(first), len(refusals), round(seconds, 2)))
            kid = cur.lastrowid
            self.db.executemany("INSERT INTO sets VALUES (?, ?, ?, ?)", [(kid, *r) for r in rows])
            self.db.executemany("INSERT INTO refusals VALUES (?, ?, ?)", [(kid, *r) for r in refusals])
            self.db.executemany(
                "INSERT INTO variants VALUES (?, ?, ?, ?, ?, ?)",
                [(kid, v, ptx8(a.sass_key), m, a.registers, a.spills) for v, (m, a) in sorted(reps.items())])

    def representatives(self, kernel: str) -> list[tuple[int, tuple[str, ...]]]:
        """(variant, representative action set) for every SASS variant of the kernel."""
        kid = self._need(kernel)
        return [(v, actions_of(m)) for v, m in self.db.execute(
            "SELECT variant, rep_mask FROM variants WHERE kernel_id = ? ORDER BY variant", (kid,))]

    def variant_of(self, kernel: str, actions, ptx_sha256: str) -> int | None:
        """The SASS variant of this set (REFUSED if ptxas refused it), or None if the kernel is not in the
        plan. Raises AtlasError when the set is not in the plan or its PTX differs from the plan's."""
        kid = self.kernel_id(kernel)
        if kid is None:
            return None
        mask = mask_of(actions)
        row = self.db.execute("SELECT ptx8, variant FROM sets WHERE kernel_id = ? AND mask = ?", (kid, mask)).fetchone()
        label = f"{kernel} [{'+'.join(canonical(actions)) or 'baseline'}]"
        if row is None:
            raise AtlasError(f"{label}: not a legal set in the atlas plan {self.path}")
        if row[0] != ptx8(ptx_sha256):
            raise AtlasError(f"{label}: PTX {ptx_sha256[:16]} differs from the atlas plan's (transforms changed "
                             f"since the plan was built?)", repro=f"python -m chronos.stages.atlas_plan --out {self.path}")
        return row[1]

    def refusal(self, kernel: str, actions) -> str:
        row = self.db.execute("SELECT reason FROM refusals WHERE kernel_id = ? AND mask = ?",
                              (self._need(kernel), mask_of(actions))).fetchone()
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
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO measured VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def measured(self, kernel: str) -> dict[int, dict]:
        """variant -> its measurement, for the variants measured so far."""
        cols = ("variant", "valid", "reason", "cycles_median", "cycles_iqr", "time_ms_median", "time_ms_iqr",
                "cubin8", "measured_at", "log")
        rows = self.db.execute(f"SELECT {', '.join(cols)} FROM measured WHERE kernel_id = ?", (self._need(kernel),))
        return {r[0]: dict(zip(cols, r)) for r in rows}

    def set_cycles(self, kernel: str) -> dict[int, float]:
        """mask -> median cycles of every set whose variant is measured and valid."""
        return dict(self.db.execute(
            "SELECT s.mask, m.cycles_median FROM sets s JOIN measured m ON m.kernel_id = s.kernel_id "
            "AND m.variant = s.variant WHERE s.kernel_id = ? AND m.valid = 1", (self._need(kernel),)))

    def resources(self, kernel: str) -> dict[int, tuple[int, int]]:
        """variant -> (registers, spills) of its representative, as ptxas reported them."""
        return {v: (r, sp) for v, r, sp in self.db.execute(
            "SELECT variant, registers, spills FROM variants WHERE kernel_id = ?", (self._need(kernel),))}

    def variant_sets(self, kernel: str) -> dict[int, list[int]]:
        """variant -> the masks of every set that assembles to it (REFUSED -> the refused sets)."""
        out: dict[int, list[int]] = {}
        for m, v in self.db.execute("SELECT mask, variant FROM sets WHERE kernel_id = ?", (self._need(kernel),)):
            out.setdefault(v, []).append(m)
        return out

    def set_variants(self, kernel: str) -> dict[int, int]:
        """mask of every set -> its variant (the inverse of variant_sets)."""
        return dict(self.db.execute("SELECT mask, variant FROM sets WHERE kernel_id = ?", (self._need(kernel),)))

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


class AtlasReplay:
    """Answers replay requests from an atlas file: (kernel, set, PTX) -> the set's SASS variant -> its
    measurement, as a store Record. Soft on purpose: anything it cannot answer exactly (another config,
    a kernel or variant it lacks, PTX that differs from the plan's) returns None and the caller falls
    back to the measurement store."""

    def __init__(self, path: str | Path):
        self.db = AtlasDB(path)
        self.meta = self.db.meta()
        self._measured: dict[str, dict[int, dict]] = {}
        self._regs: dict[str, dict[int, tuple[int, int]]] = {}
        self.last_miss = ""

    def record(self, kernel: str, actions, ptx_sha256: str, config_hash: str):
        from chronos.measure.store import Record

        if self.meta.get("config_hash") != config_hash or not self.db.has(kernel):
            return None
        try:
            variant = self.db.variant_of(kernel, actions, ptx_sha256)
        except AtlasError as e:
            self.last_miss = str(e)
            return None
        base = {"kernel": kernel, "ptx_sha256": ptx_sha256, "cubin_sha256": "", "gpu": self.meta.get("gpu", "?"),
                "driver": self.meta.get("driver", "?"), "ptxas": self.meta.get("ptxas", "?"),
                "config_hash": config_hash, "actions": tuple(canonical(actions))}
        if variant == REFUSED:
            return Record(**base, valid=False, reason="ptxas_error", log=self.db.refusal(kernel, actions),
                          extra={"atlas": str(self.db.path)})
        if kernel not in self._measured:
            self._measured[kernel] = self.db.measured(kernel)
            self._regs[kernel] = self.db.resources(kernel)
        m = self._measured[kernel].get(variant)
        if m is None:
            self.last_miss = f"{kernel}: SASS variant {variant} of the atlas is not measured yet"
            return None
        regs, spills = self._regs[kernel].get(variant, (None, None))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m["measured_at"]))
        if m["cubin8"] is not None:  # the measured representative's cubin: its sha256's first 16 hex digits
            base["cubin_sha256"] = (m["cubin8"] & (1 << 64) - 1).to_bytes(8, "big").hex()
        return Record(**base, valid=bool(m["valid"]), reason=m["reason"], log=m["log"],
                      cycles_median=m["cycles_median"], cycles_iqr=m["cycles_iqr"],
                      time_ms_median=m["time_ms_median"], time_ms_iqr=m["time_ms_iqr"], registers=regs,
                      spills=spills, extra={"atlas_variant": variant}, created_at=stamp)

    def close(self) -> None:
        self.db.close()


def merge_measured(dst: AtlasDB, src_path: str | Path) -> int:
    """Copy the `measured` rows and measurement metadata of another copy of the plan (a GPU run's output)
    into `dst`, kernel by kernel name. The plans must agree on each kernel's variants. Returns rows copied."""
    src = AtlasDB(src_path)
    smeta, dmeta = src.meta(), dst.meta()
    if dmeta.get("config_hash", smeta.get("config_hash")) != smeta.get("config_hash"):
        raise AtlasError(f"{src_path} was measured with config {smeta.get('config_hash')}, "
                         f"{dst.path} with {dmeta.get('config_hash')}")
    copied = 0
    ours = {r["kernel"]: r for r in dst.kernels()}
    for k in src.kernels():
        mine = ours.get(k["kernel"])
        if mine is None:
            continue
        kid = mine["id"]
        if (mine["root_ptx_sha256"], mine["variants"]) != (k["root_ptx_sha256"], k["variants"]):
            raise AtlasError(f"{k['kernel']}: the plans in {src_path} and {dst.path} differ")
        rows = src.db.execute("SELECT * FROM measured WHERE kernel_id = ?", (k["id"],)).fetchall()
        with dst.db:
            dst.db.executemany("INSERT OR REPLACE INTO measured VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               [(kid, *r[1:]) for r in rows])
        copied += len(rows)
    keep = {k: v for k, v in smeta.items() if k in ("config_hash", "config", "gpu", "driver", "measured_with_ptxas")}
    first = min(filter(None, (smeta.get("measured_first"), dmeta.get("measured_first"))), default=None)
    last = max(filter(None, (smeta.get("measured_last"), dmeta.get("measured_last"))), default=None)
    dst.set_meta(**keep, **({"measured_first": first} if first else {}), **({"measured_last": last} if last else {}))
    src.close()
    return copied
