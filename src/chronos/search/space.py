"""The variant space: a variant is a function of the *set* of applied actions, realised in one canonical
order.

Making the space a set space keeps it finite and lets the atlas be complete: every rollout, in any order,
lands on a variant that `realize(root, set)` reproduces exactly (same PTX, so the same store record).

Canonical order and why: vectorise first (the hints and prefetches then see the final accesses), then
split_ld (it leaves vec_ld's vectors alone, so the pair means "vectorise scalars, split the original
vectors"), cache hints (qualifiers only), prefetches (new instructions, so that a reorder schedules them
too), reorder, and the register budget last (a directive; ptxas decides its legality on the final text).
Order-sensitive pairs, all resolved by that order: vec_ld/split_ld (see above); prefetch/reorder (a
prefetch inserted after a reorder would not be scheduled); reorder/vec_* (vectors change the DAG).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

from chronos.actions import CONFLICT_GROUPS, SEED, V2, ActionSpace
from chronos.errors import IllegalActionError
from chronos.kernels.spec import load_module, load_specs
from chronos.ptx import emit
from chronos.ptx.ir import Module
from chronos.transforms import apply

CANONICAL_ORDER: tuple[str, ...] = SEED.canonical_order
"""The seed's actions in the order a set of them is realised (defined in chronos.actions, with v2's)."""
_RANK = {a: i for i, a in enumerate(V2.canonical_order)}  # the seed's order on seed actions (chronos.actions)

SLOTS: tuple[tuple[str, ...], ...] = SEED.slots()
"""The seed space's decision slots in canonical order: each slot takes none or exactly one of its actions."""
assert SLOTS[3] == CONFLICT_GROUPS["load_cache_hint"] and SLOTS[-1] == CONFLICT_GROUPS["register_budget"]


def canonical(actions: Iterable[str]) -> tuple[str, ...]:
    """The actions as a set, in canonical order (`stop` dropped). Raises on conflicting members. One order
    serves both spaces: v2's, which keeps the seed's on seed actions."""
    acts = sorted({a for a in actions if a != "stop"}, key=_RANK.__getitem__)
    groups = [V2.group_of[a] for a in acts if a in V2.group_of]
    if len(groups) != len(set(groups)):
        raise IllegalActionError("+".join(acts), "two actions of one conflict group")
    return tuple(acts)


def realize(root: Module, actions: Iterable[str], *, defer_ptxas: bool = False) -> Module | None:
    """The variant of `root` for this action set (canonical order), or None if some step is illegal there.
    defer_ptxas: leave register-budget verdicts to the compile step (see chronos.transforms.apply)."""
    module = root
    try:
        for a in canonical(actions):
            module = apply(module, a, defer_ptxas=defer_ptxas)
    except IllegalActionError:
        return None
    return module


@functools.lru_cache(maxsize=4)
def _root_module(specs_json: str, entry: str) -> Module:
    spec = next(s for s in load_specs(Path(specs_json)) if s.entry == entry)
    return load_module(Path(specs_json), spec)


def realize_recipe(recipe: tuple[str, str], actions: tuple[str, ...]) -> str | None:
    """The PTX of `actions` on the kernel named by `recipe` ((specs.json, entry); see Variant.recipe), or None
    if the set is not legal there. The `realize` a GpuBackend measuring recipes is given: module level, as
    it runs in the backend's compile processes (each keeps its few parsed root modules)."""
    module = realize(_root_module(*recipe), actions, defer_ptxas=True)
    return None if module is None else emit(module)


def enumerate_sets(root: Module, *, defer_ptxas: bool = True,
                   space: ActionSpace = SEED) -> Iterator[tuple[tuple[str, ...], Module]]:
    """Every legal action set with its variant (the empty set first), by depth-first search over the slots
    in canonical order, so that common prefixes are transformed once.

    By default register budgets are not checked with ptxas here: the measurement compiles every variant
    anyway and records a refused budget as an invalid variant ("ptxas_error"), which saves one ptxas run
    per budget per prefix."""

    slots = SLOTS if space is SEED else space.slots()

    def dfs(slot: int, module: Module, acts: tuple[str, ...]):
        if slot == len(slots):
            yield acts, module
            return
        yield from dfs(slot + 1, module, acts)
        for a in slots[slot]:
            try:
                nxt = apply(module, a, defer_ptxas=defer_ptxas)
            except IllegalActionError:
                continue
            yield from dfs(slot + 1, nxt, (*acts, a))

    yield from dfs(0, root, ())
