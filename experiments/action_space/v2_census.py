"""Action space v2 (issue #14) census: on every corpus family, how many kernels each v2 load hint applies to
(per load class), whether ptxas accepts every applicable variant, the occupancy targets reachable, and the
mean number of legal actions per kernel in the seed space and in v2 (`legal_actions(space=...)` on the
unmodified kernel, stop excluded; register budgets decided by ptxas unless --no-assemble); then the loop
transforms (unroll x2/x4): how many kernels have a loop, how many each unroll applies to, why the other
loops are refused, and whether ptxas accepts every unrolled variant (with how many start to spill).

    python experiments/action_space/v2_census.py [--only captured] [--no-assemble] [--loops-only]

Families as in legality_census.py (gemm_tile, the round-trip corpus, the Triton suite, the captured
workloads) plus the LLM-size Triton tier (data/kernels/triton_llm). Every applicable variant is assembled
for its kernel's own target with Chronos's ptxas; a refusal is printed with the kernel and the transform (it
would be a bug: these transforms are legal by construction).
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from pathlib import Path

from chronos.actions import SEED, V2
from chronos.errors import NotApplicable, PtxasError
from chronos.ptx import emit, parse
from chronos.toolchain import assemble
from chronos.transforms import legal_actions
from chronos.transforms.cache_policy import (
    l1_eviction,
    l2_policy,
    load_classes,
    prefetch_size,
    store_eviction,
)
from chronos.transforms.loops import single_block_loops, unroll
from chronos.transforms.occupancy import occupancy_budgets, threads_per_cta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legality_census import ROOT, _families

HINTS = {
    **{f"L1::{p}/{w}": (lambda m, p=p, w=w: l1_eviction(m, p, w))
       for p in ("evict_first", "evict_last", "no_allocate") for w in ("reread", "streaming")},
    **{f"L2::{p}/{w}": (lambda m, p=p, w=w: l2_policy(m, p, w))
       for p in ("evict_first", "evict_last") for w in ("reread", "streaming")},
    **{f"L2::{s}": (lambda m, s=s: prefetch_size(m, s)) for s in ("64B", "128B", "256B")},
    **{f"st.L1::{p}": (lambda m, p=p: store_eviction(m, p))
       for p in ("evict_first", "evict_last", "no_allocate")},
}


def census(kernels, check: bool) -> tuple[Counter, Counter, list, Counter, Counter]:
    applies, classes, refused, reach, legal = Counter(), Counter(), [], Counter(), Counter()
    for name, text in kernels:
        module = parse(text, file=name)
        for space in (SEED, V2):
            legal[space.name] += len(legal_actions(module, defer_ptxas=not check, space=space))
        for fn in module.entries():
            classes.update(load_classes(fn).values())
        try:
            reach[len(occupancy_budgets(threads_per_cta(module)))] += 1
        except NotApplicable:
            reach["no CTA size"] += 1
        for label, hint in HINTS.items():
            try:
                out = hint(module)
            except NotApplicable:
                continue
            applies[label] += 1
            if check:
                try:
                    assemble(emit(out), module.arch)
                except PtxasError as e:
                    refused.append((name, label, e.message))
    return applies, classes, refused, reach, legal


# verify=False: a ptxas refusal must show up below as REFUSED, not vanish as "not applicable"
LOOPS = {f"unroll_{f}": (lambda m, f=f: unroll(m, f, verify=False)) for f in (2, 4)}


def families() -> dict[str, list[tuple[str, str]]]:
    fams = _families()
    llm = sorted((ROOT / "data/kernels/triton_llm").glob("*.ptx"))
    fams["triton_llm"] = [(p.name, p.read_text()) for p in llm]
    return fams


def _spills(result) -> int:
    return sum(e.spill_stores + e.spill_loads for e in result.entries.values())


def loop_census(kernels, check: bool) -> tuple[Counter, Counter, list]:
    """Counts (kernels with a backward branch, with an unrollable loop, unrollable loops, per transform:
    applies / spills where the original did not) and refusal reasons per loop; ptxas refusals."""
    counts, why, refused = Counter(), Counter(), []
    for name, text in kernels:
        module = parse(text, file=name)
        found = [single_block_loops(fn) for fn in module.entries()]
        ok, no = sum(len(f[0]) for f in found), [r for f in found for r in f[1]]
        counts["with a loop"] += bool(ok or no)
        counts["unrollable loops"] += ok
        counts["refused loops"] += len(no)
        why.update(re.sub(r"\d+ instructions", "N instructions", r.split(": ", 1)[1]) for r in no)
        base = None
        for label, transform in LOOPS.items():
            try:
                out = transform(module)
            except NotApplicable as e:
                if "would add" in str(e):
                    why["the unrolled function would exceed the size cap"] += 1
                continue
            counts[label] += 1
            if not check:
                continue
            try:
                base = assemble(emit(module), module.arch) if base is None else base
                result = assemble(emit(out), module.arch)
            except PtxasError as e:
                refused.append((name, label, e.message))
                continue
            counts[f"{label} spills"] += _spills(result) > 0 and _spills(base) == 0
    return counts, why, refused


def print_loops(fam: str, kernels, check: bool) -> None:
    t0 = time.perf_counter()
    counts, why, refused = loop_census(kernels, check)
    n = len(kernels)
    print(f"\n== {fam} loops: {n} kernels, {counts['with a loop']} with a backward branch; loops: "
          f"{counts['unrollable loops']} unrollable, {counts['refused loops']} refused")
    print("   applies to: " + ", ".join(f"{t} {counts[t]}/{n}" for t in LOOPS))
    if check:
        applied = sum(counts[t] for t in LOOPS)
        spills = ", ".join(f"{t} {counts[t + ' spills']}" for t in LOOPS)
        print(f"   ptxas: {applied - len(refused)} of {applied} variants assembled, {len(refused)} refused; "
              f"newly spilling: {spills} ({time.perf_counter() - t0:.0f} s)")
    for reason, count in why.most_common():
        print(f"   loop refused {count:3d}x  {reason}")
    for name, label, reason in refused[:5]:
        print(f"   REFUSED {name} {label}: {reason}")


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    check = "--no-assemble" not in sys.argv
    fams = {f: k for f, k in families().items() if only in f}
    for fam, kernels in fams.items():
        print_loops(fam, kernels, check)
    if "--loops-only" in sys.argv:
        return
    for fam, kernels in fams.items():
        t0 = time.perf_counter()
        applies, classes, refused, reach, legal = census(kernels, check)
        n = len(kernels)
        print(f"\n== {fam}: {n} kernels; global loads: {classes['reread']} re-read, {classes['streaming']} "
              f"streaming; occupancy targets per kernel: {dict(sorted(reach.items(), key=str))}")
        print(f"   legal actions per kernel (mean, stop excluded): seed {legal['seed'] / n:.1f} of "
              f"{SEED.size - 1}, v2 {legal['v2'] / n:.1f} of {V2.size - 1}")
        print("   applies to: " + ", ".join(f"{h} {applies[h]}/{n}" for h in HINTS))
        verdict = (f"{sum(applies.values())} variants assembled, {len(refused)} refused" if check
                   else "not assembled")
        print(f"   ptxas: {verdict} ({time.perf_counter() - t0:.0f} s)")
        for name, label, why in refused[:5]:
            print(f"   REFUSED {name} {label}: {why}")


if __name__ == "__main__":
    main()
