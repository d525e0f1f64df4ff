"""Action space v2 (issue #14) census: on every corpus family, how many kernels each v2 load hint applies to
(per load class), whether ptxas accepts every applicable variant, the occupancy targets reachable, and the
mean number of legal actions per kernel in the seed space and in v2 (`legal_actions(space=...)` on the
unmodified kernel, stop excluded; register budgets decided by ptxas unless --no-assemble).

    python benchmarks/v2_census.py [--only captured] [--no-assemble]

Families as in legality_census.py (gemm_tile, the round-trip corpus, both Triton tiers, the captured
workloads). Every applicable variant is assembled for its kernel's own target with Chronos's ptxas; a
refusal is printed with the kernel and the hint (it would be a bug: hints never change legality).
"""

from __future__ import annotations

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
from chronos.transforms.occupancy import occupancy_budgets, threads_per_cta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legality_census import _families

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


def main() -> None:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    check = "--no-assemble" not in sys.argv
    for fam, kernels in _families().items():
        if only not in fam:
            continue
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
