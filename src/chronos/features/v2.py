"""Observation v2 (issue #14): the seed's 25 features (features.seed, unchanged) followed by 27 features of
what the v2 actions' outcomes depend on — 52 in all. The v2 action space observes these; the seed space keeps
chronos.features.seed exactly, so that the seed's checkpoints and reports stay reproducible.

Scaling follows features.seed: counts are log1p, fractions are in [0, 1] (0 when the denominator is 0),
`has_*` are 0/1 flags; a value that cannot be known is 0 with its flag 0, never a guess. Each feature is a
deterministic, cheap function of the PTX, the launch (a KernelSpec: grid, block, dynamic shared bytes, scalar
arguments) and ptxas's resource report for this variant, when the caller has them (no ptxas run here).

Why each group, per v2 action family (chronos.actions):

* registers and spills (`ptxas_registers`, `ptxas_spill_bytes`, `has_ptxas_info`) — the register budgets
  (maxnreg_*, occ_ctas_*, maxnreg_uncapped): a budget below the registers used costs spills, above them it
  changes nothing; unrolling raises register pressure.
* CTA size, CTAs per SM, occupancy, whether registers bind (`threads_per_cta`, `has_cta_size`,
  `ctas_per_sm`, `occupancy`, `register_limited`, `shared_bytes_per_cta`) — occ_ctas_<k> is reachable
  only for some k at a CTA size, and helps only where registers, not threads or shared memory, limit the
  CTAs per SM (chronos.gpu holds the SM limits, with sources).
* the launch against the GPU (`has_launch`, `grid_ctas_per_sm`, `waves`, `last_wave_fill`) — more CTAs
  per SM pays when the grid runs several waves or a ragged last wave; a grid smaller than the SM count
  gains nothing from occupancy, and its loads stream through L2 differently.
* loops (`n_loops`, `n_single_block_loops`, `unroll_applies`, `loop_body_instructions`,
  `loop_instruction_fraction`, `loop_trip_count`, `has_trip_count`) — loop_unroll_2/4 apply to
  single-block loops only, pay on short bodies run many times, and cost registers; the re-read classes
  of the cache actions are defined by loop regions.
* re-read vs streaming loads (`n_reread_loads`, `reread_load_fraction`) — the l1_*/l2_* actions come
  per load class (chronos.transforms.cache_policy): evict_last suits data read again, evict_first and
  no_allocate streaming data.
* bytes moved per thread (`global_load_bytes`, `global_store_bytes`, `global_access_width`) — how
  memory-bound the body is, and how wide its accesses already are (vec_ld/vec_st/split_ld, prefetch
  sizes, store eviction).
* tensor cores (`n_mma`, `n_wgmma`) — mma/wgmma kernels are register-heavy and latency-bound in their
  loops: budgets and unrolling act differently there than on element-wise kernels.

Aggregation over several entries follows features.seed (counts summed, fractions from summed parts); the
launch and occupancy features are the launched entry's (`launch.entry`, else the first entry).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from chronos.errors import NotApplicable
from chronos.features.seed import FEATURE_DOCS, extract_features
from chronos.gpu import (
    MAX_CTAS_PER_SM,
    MAX_REGS_PER_THREAD,
    MAX_THREADS_PER_SM,
    SHARED_GRANULE,
    SHARED_PER_SM,
    SHARED_RESERVED_PER_CTA,
    SM_COUNT,
)
from chronos.ptx.analysis import memory_op
from chronos.ptx.ir import Directive, Function, Imm, Instruction, Module
from chronos.ptx.loop_trips import back_edges, trip_counts
from chronos.transforms.cache_policy import load_classes
from chronos.transforms.loops import MAX_ADDED_INSTRUCTIONS, single_block_loops
from chronos.transforms.occupancy import ctas_per_sm, threads_per_cta

NEW_FEATURE_DOCS: dict[str, str] = {
    "ptxas_registers": "registers per thread ptxas allocated, divided by 255; 0 without ptxas info",
    "ptxas_spill_bytes": "log1p of ptxas's spill bytes per thread (stores + loads); 0 without ptxas info",
    "has_ptxas_info": "1 when ptxas's register/spill report for this variant was given, else 0",
    "threads_per_cta": "threads per CTA (the launch's block, else .reqntid/.maxntid) divided by 1024",
    "has_cta_size": "1 when the CTA size is known (launch or .reqntid/.maxntid), else 0",
    "ctas_per_sm": "CTAs that fit on one SM (registers: ptxas's count, else .maxnreg; thread slots; CTA cap; "
                   "shared memory) divided by 32; 0 when the CTA size is unknown",
    "occupancy": "resident threads per SM at ctas_per_sm, divided by 2048",
    "register_limited": "1 when the known register count allows fewer CTAs per SM than threads and shared "
                        "memory do, else 0",
    "shared_bytes_per_cta": "log1p of shared bytes per CTA: static .shared declarations plus the launch's "
                            "dynamic shared memory",
    "has_launch": "1 when the launch (grid, block) is known, else 0",
    "grid_ctas_per_sm": "log1p of the grid's CTAs divided by the SM count (132)",
    "waves": "log1p of the grid's CTAs divided by (SMs x ctas_per_sm); 0 without a launch",
    "last_wave_fill": "fraction of the SMs' CTA slots the last wave fills (1: no ragged tail); 0 without "
                      "a launch",
    "n_loops": "log1p of loops (backward branches)",
    "n_single_block_loops": "log1p of single-block loops (those loop_unroll can take)",
    "unroll_applies": "1 when loop_unroll_2 applies by structure (a single-block loop, within the size "
                      "cap; ptxas may still refuse), else 0",
    "loop_body_instructions": "log1p of the instructions of the largest single-block loop body",
    "loop_instruction_fraction": "fraction of the instructions that stand inside some loop",
    "loop_trip_count": "log1p of the largest trip count read from the PTX (a compare of an induction "
                       "register against a constant or a launch scalar); 0 when none is known",
    "has_trip_count": "1 when some loop's trip count is known, else 0",
    "n_reread_loads": "log1p of global loads whose addresses the kernel reads again in another loop "
                      "region (cache_policy.load_classes)",
    "reread_load_fraction": "re-read global loads divided by global loads",
    "global_load_bytes": "log1p of bytes per thread the body's global loads and cp.async copies read "
                         "(static: each instruction once)",
    "global_store_bytes": "log1p of bytes per thread the body's global stores write (static)",
    "global_access_width": "mean bytes per global load/store instruction divided by 16 (a .v4.b32 is 1)",
    "n_mma": "log1p of warp-level tensor-core ops (mma)",
    "n_wgmma": "log1p of warpgroup tensor-core ops (wgmma.mma_async)",
}
"""The new features: name -> one-line meaning and scaling."""

FEATURE_V2_DOCS: dict[str, str] = {**FEATURE_DOCS, **NEW_FEATURE_DOCS}
"""Every v2 feature, in the order `kernel_features_v2` returns them: the seed's 25 first."""

FEATURE_V2_NAMES: tuple[str, ...] = tuple(FEATURE_V2_DOCS)
NUM_FEATURES_V2 = len(FEATURE_V2_NAMES)
assert NUM_FEATURES_V2 == 52 and FEATURE_V2_NAMES[:25] == tuple(FEATURE_DOCS)

_SHARED = re.compile(r"\.shared\b.*?\.(b8|b16|b32|b64|u8|u16|u32|u64|s8|s16|s32|s64|f16|f32|f64)\s+\S+?"
                     r"((?:\[\d+\])+)")


def _info(ptxas_info, key: str) -> int:
    v = ptxas_info.get(key) if isinstance(ptxas_info, Mapping) else getattr(ptxas_info, key, None)
    return int(v or 0)


def _static_shared(module: Module, fn: Function) -> int:
    """Bytes of the sized `.shared` declarations at module level and in `fn` (an `.extern .shared` array is
    dynamic: the launch gives its size)."""
    total = 0
    for s in [*module.items, *(fn.body or [])]:
        if isinstance(s, Directive) and s.keyword == ".shared":
            m = _SHARED.search(s.text)
            if m:
                n = math.prod(int(d) for d in re.findall(r"\d+", m.group(2)))
                total += n * int(re.sub(r"\D", "", m.group(1))) // 8
    return total


def _launched(module: Module, launch) -> Function:
    entries = module.entries()
    name = getattr(launch, "entry", None)
    return next((fn for fn in entries if fn.name == name), entries[0])


def _occupancy(module: Module, fn: Function, launch, ptxas_info) -> dict[str, float]:
    """CTA size, CTAs per SM, occupancy, shared memory and the launch's waves."""
    threads = None
    if launch is not None:
        threads = math.prod(launch.block)
    else:
        try:
            threads = threads_per_cta(module)
        except NotApplicable:
            pass
    shared = _static_shared(module, fn) + int(getattr(launch, "shared_bytes", 0) or 0)
    out = {"shared_bytes_per_cta": math.log1p(shared), "has_cta_size": float(threads is not None)}
    if threads is None or threads > MAX_THREADS_PER_SM:
        return out
    regs = _info(ptxas_info, "registers") if ptxas_info is not None else fn.maxnreg
    by_threads = min(MAX_CTAS_PER_SM, MAX_THREADS_PER_SM // threads)
    by_regs = ctas_per_sm(threads, min(regs, MAX_REGS_PER_THREAD)) if regs else by_threads
    by_shared = SHARED_PER_SM // (-(-shared // SHARED_GRANULE) * SHARED_GRANULE + SHARED_RESERVED_PER_CTA)
    ctas = min(by_regs, by_shared)
    out.update(threads_per_cta=threads / 1024, ctas_per_sm=ctas / MAX_CTAS_PER_SM,
               occupancy=ctas * threads / MAX_THREADS_PER_SM,
               register_limited=float(bool(regs) and by_regs < min(by_threads, by_shared)))
    if launch is not None:
        grid = math.prod(launch.grid)
        out.update(has_launch=1.0, grid_ctas_per_sm=math.log1p(grid / SM_COUNT))
        slots = SM_COUNT * ctas
        if slots:
            full = math.ceil(grid / slots)
            out.update(waves=math.log1p(grid / slots), last_wave_fill=(grid - (full - 1) * slots) / slots)
    return out


def _loops(fn: Function, launch) -> dict[str, float]:
    body = fn.body or []
    edges = back_edges(fn)
    single, _ = single_block_loops(fn)
    sizes = [loop.size(body) for loop in single]
    inside = set()
    for e in edges:
        inside.update(i for i in range(e.head, e.branch + 1) if isinstance(body[i], Instruction))
    trips = [t for t in trip_counts(fn, launch) if t is not None]
    return {"loops": len(edges), "single": len(single), "unroll": bool(single) and sum(sizes) + len(sizes)
            <= MAX_ADDED_INSTRUCTIONS, "body": max(sizes, default=0), "inside": len(inside),
            "trip": max(trips, default=0), "has_trip": bool(trips)}


def _memory(fn: Function) -> dict[str, int]:
    out = {"ld_bytes": 0, "st_bytes": 0, "accesses": 0, "mma": 0, "wgmma": 0, "instructions": 0}
    for s in fn.body or []:
        if not isinstance(s, Instruction):
            continue
        out["instructions"] += 1
        out["mma"] += s.op == "mma"
        out["wgmma"] += s.op == "wgmma" and "mma_async" in s.mods
        mem = memory_op(s)
        if mem is None:
            continue
        if s.op == "cp" and "async" in s.mods and "global" in s.mods:
            size = next((o.value for o in s.operands if isinstance(o, Imm) and o.value), 0)
            out["ld_bytes"] += size
            out["accesses"] += 1
        elif mem.space == "global" and mem.kind in ("load", "store"):
            out["ld_bytes" if mem.kind == "load" else "st_bytes"] += mem.bytes
            out["accesses"] += 1
    reread = load_classes(fn)
    out["loads"] = len(reread)
    out["reread"] = sum(c == "reread" for c in reread.values())
    return out


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _new_features(module: Module, launch, ptxas_info) -> dict[str, float]:
    lg = math.log1p
    counts: dict[str, float] = {}
    loops: dict[str, float] = {}
    for fn in module.entries():
        for k, v in _memory(fn).items():
            counts[k] = counts.get(k, 0) + v
        for k, v in _loops(fn, launch).items():
            loops[k] = max(loops.get(k, 0), v) if k in ("body", "trip", "has_trip", "unroll") \
                else loops.get(k, 0) + v
    values = dict.fromkeys(NEW_FEATURE_DOCS, 0.0)
    if ptxas_info is not None:
        values.update(ptxas_registers=min(_info(ptxas_info, "registers") / MAX_REGS_PER_THREAD, 1.0),
                      ptxas_spill_bytes=lg(_info(ptxas_info, "spills")), has_ptxas_info=1.0)
    values.update(_occupancy(module, _launched(module, launch), launch, ptxas_info))
    values.update(
        n_loops=lg(loops["loops"]), n_single_block_loops=lg(loops["single"]),
        unroll_applies=float(loops["unroll"]), loop_body_instructions=lg(loops["body"]),
        loop_instruction_fraction=_ratio(loops["inside"], counts["instructions"]),
        loop_trip_count=lg(loops["trip"]), has_trip_count=float(loops["has_trip"]),
        n_reread_loads=lg(counts["reread"]), reread_load_fraction=_ratio(counts["reread"], counts["loads"]),
        global_load_bytes=lg(counts["ld_bytes"]), global_store_bytes=lg(counts["st_bytes"]),
        global_access_width=min(_ratio(counts["ld_bytes"] + counts["st_bytes"], counts["accesses"]) / 16,
                                1.0),
        n_mma=lg(counts["mma"]), n_wgmma=lg(counts["wgmma"]))
    return values


def kernel_features_v2(module: Module, launch=None, ptxas_info=None) -> np.ndarray:
    """The 52 v2 features of `module` (float32, FEATURE_V2_NAMES order): the seed's 25, then the new.

    `launch`: the kernel's KernelSpec (grid, block, shared_bytes, scalar args, entry), or None.
    `ptxas_info`: ptxas's report for this very variant — a mapping or object with `registers` and `spills`
    (bytes; chronos.sass.Assembled and the measurement records carry both), or None."""
    seed = extract_features(module)  # raises ChronosError for a module without an entry body
    new = _new_features(module, launch, ptxas_info)
    return np.asarray([*seed, *(new[n] for n in NEW_FEATURE_DOCS)], dtype=np.float32)


def kernel_features_v2_from_ptx(text: str, launch=None, ptxas_info=None,
                                file: str | None = None) -> np.ndarray:
    """Parse PTX source and return its v2 features."""
    from chronos.ptx import parse

    return kernel_features_v2(parse(text, file=file), launch, ptxas_info)


# ------------------------------------------------------------------ which observation an action space uses
OBSERVATIONS: dict[str, tuple[str, ...]] = {"seed": tuple(FEATURE_DOCS), "v2": FEATURE_V2_NAMES}
"""Observation version -> its feature names. The version is the action space's name: the seed space observes
chronos.features.seed' 25, the v2 space these 52 (checkpoints record which: chronos.rl.checkpoint)."""


def observation_version(space) -> str:
    """The observation an action space (chronos.actions.ActionSpace) reads: its name's."""
    return space.name


def observed_features(space) -> tuple[str, ...]:
    """The feature names a policy of `space` reads, in order."""
    return OBSERVATIONS[observation_version(space)]


def space_features(module: Module, space, launch=None, ptxas_info=None) -> np.ndarray:
    """The features a policy of `space` reads: the seed's 25 exactly (launch, ptxas info unused) or v2's."""
    if observation_version(space) == "seed":
        return np.asarray(extract_features(module), dtype=np.float32)
    return kernel_features_v2(module, launch, ptxas_info)
