"""Seeded random search in wall time: the comparator that tells whether greedy's choices beat chance.

Per kernel `sets` distinct random legal sequences (each 1..max_steps actions long, every action drawn
uniformly from the legal ones after the previous) are measured beside the baseline in one side-by-side
comparison (chronos.search.timed), and the fastest faster one is judged again beside the baseline alone, so
its reported ratio is not the maximum of many noisy draws. The draws are seeded by the seed and the
kernel's name: a replay, or a resumed run, draws the same sets whatever the order of the kernels.
"""

from __future__ import annotations

import random

from chronos.actions import ActionSpace
from chronos.errors import IllegalActionError
from chronos.measure.verdicts import FASTER
from chronos.search.space import canonical, realize
from chronos.search.timed import TimedEvaluator, TimedSearch, time_row
from chronos.transforms import apply


def draw_sets(ev: TimedEvaluator, space: ActionSpace, sets: int, max_steps: int, seed: int) -> list[tuple]:
    """`sets` distinct canonical random legal sequences (fewer where the kernel has fewer). Each step takes
    the first legal action of a seeded shuffle of the space (uniform over the legal ones, without testing
    all of them). Register budgets are not checked with ptxas here (one run per budget per step would
    dominate); a budget ptxas refuses becomes an invalid contender of the comparison."""
    rng = random.Random(f"{seed}:{ev.spec.kernel}")
    found: list[tuple] = []
    for _ in range(20 * sets):
        if len(found) == sets:
            break
        module, acts = ev.root, ()
        for _ in range(rng.randint(1, max_steps)):
            step = _extend(ev, module, acts, rng.sample(space.transforms, len(space.transforms)))
            if step is None:
                break
            module, acts = step
        if acts and acts not in found:
            found.append(acts)
    return found


def _extend(ev: TimedEvaluator, module, acts: tuple, order: list[str]):
    """(module, canonical set) after the first action of `order` legal on `module` and in canonical order
    from the root; None if there is none."""
    for a in order:
        try:
            apply(module, a, defer_ptxas=True)
            step = canonical((*acts, a))
        except IllegalActionError:
            continue
        nxt = realize(ev.root, step, defer_ptxas=True)
        if nxt is not None:
            return nxt, step
    return None


def random_in_time(ev: TimedEvaluator, space: ActionSpace, sets: int, max_steps: int,
                   seed: int) -> TimedSearch:
    """The search's record in the shape of greedy_in_time's: trace[0] holds every drawn set's row."""
    drawn = draw_sets(ev, space, sets, max_steps, seed)
    cmp, idx = ev.compare(drawn)
    rows = [{"set": list(s), **(time_row(cmp, i, ev.timing, ev.min_gain) if i is not None
                                else {"valid": False, "reason": "illegal_in_order"})}
            for s, i in zip(drawn, idx, strict=True)]
    faster = [r for r in rows if r.get("verdict") == FASTER]
    best = tuple(min(faster, key=lambda r: r["ratio"])["set"]) if faster else ()
    trace = [{"step": 0, "incumbent": time_row(cmp, 0, ev.timing, ev.min_gain), "primary": cmp.primary,
              "candidates": rows, "chosen": best[0] if best else "stop", "drawn": len(drawn)}]
    if best:  # judged again beside the baseline alone
        cmp, idx = ev.compare([best])
    stamps = sorted(ev.stamps)
    return TimedSearch(ev.spec.kernel, time_row(cmp, 0, ev.timing, ev.min_gain),
                       time_row(cmp, idx[0] if best else 0, ev.timing, ev.min_gain), cmp.primary, trace, [],
                       ev.count, (stamps[0], stamps[-1]) if stamps else ("", ""), strategy="random_time")
