"""The action spaces: their names (the policy's logits, in order), conflict groups, mask and history.

Two spaces, chosen by params.yaml's `actions` (chronos.config):

* `seed` — the seed's 20 PTX transforms plus `stop` (shared/SEED.md). Its names and their order index the
  policy's 21 logits and are part of the checkpoint format: never reorder them.
* `v2` — issue #14's superset: the seed's 21 names at the seed's indices (stop stays 20), then per-load-class
  L1 eviction priorities and L2 cache policies, one L2 prefetch size, one store eviction priority, register
  budgets as occupancy targets (k CTAs/SM, plus removing the cap), and loop unrolling x2/x4. A v2 set of
  seed actions is the seed's variant exactly (same canonical order, same transforms).

An action is *masked out* (0 in the mask) when it was already applied, when another member of its conflict
group was applied (one cache hint, one register budget, one reorder, one prefetch, ... at most), or when a
legality oracle (`chronos.transforms.legal_actions`) says it would not change the kernel legally. `stop` is
always allowed so that a rollout can always end.

The module-level names (ACTION_NAMES, CONFLICT_GROUPS, get_action_mask, ...) are the seed space's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from chronos.errors import UnknownActionError

ACTION_NAMES: tuple[str, ...] = (
    "vec_ld", "vec_st", "split_ld",
    "cache_cs", "cache_cg", "cache_ca", "cache_cv",
    "st_cache_cs", "st_cache_wt", "st_cache_wb",
    "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255",
    "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl",
    "prefetch_L1", "prefetch_L2",
    "stop",
)
"""The seed's 21 action names, in the order of the policy's logits."""

NUM_ACTIONS = len(ACTION_NAMES)
"""21: 20 transforms plus stop."""

ACTION_INDEX: dict[str, int] = {name: i for i, name in enumerate(ACTION_NAMES)}
"""Action name -> logit index."""

STOP = ACTION_INDEX["stop"]
"""Index of the `stop` action (20, in both spaces)."""

CONFLICT_GROUPS: dict[str, tuple[str, ...]] = {
    "load_cache_hint": ("cache_cs", "cache_cg", "cache_ca", "cache_cv"),
    "store_cache_hint": ("st_cache_cs", "st_cache_wt", "st_cache_wb"),
    "register_budget": ("maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255"),
    "reorder": ("reorder_cp", "reorder_il", "reorder_lf", "reorder_sl"),
    "prefetch": ("prefetch_L1", "prefetch_L2"),
}
"""Mutually exclusive actions: at most one member of each group is applied. vec_ld, vec_st and split_ld
belong to no group (each is applied at most once, independently)."""

GROUP_OF: dict[str, str] = {a: g for g, members in CONFLICT_GROUPS.items() for a in members}
"""Action name -> its conflict group, for the actions that have one."""

CANONICAL_ORDER: tuple[str, ...] = (
    "vec_ld", "vec_st", "split_ld",
    "cache_cs", "cache_cg", "cache_ca", "cache_cv",
    "st_cache_cs", "st_cache_wt", "st_cache_wb",
    "prefetch_L1", "prefetch_L2",
    "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl",
    "maxnreg_32", "maxnreg_64", "maxnreg_128", "maxnreg_255",
)
"""The order a set of seed actions is realised in (why: chronos.search.space)."""

assert NUM_ACTIONS == 21 and STOP == 20

# ------------------------------------------------------------------ v2's families, each declared once
LOAD_CLASSES = ("reread", "streaming")
"""Loads whose data the kernel reads again later, and the others (chronos.transforms.cache_policy)."""
L1_EVICTIONS = ("evict_first", "evict_last", "no_allocate")
L2_EVICTIONS = ("evict_first", "evict_last")
PREFETCH_SIZES = ("64B", "128B", "256B")
OCCUPANCY_TARGETS = (1, 2, 3, 4, 6, 8, 16)
"""CTAs per SM an `occ_ctas_<k>` action asks for (each masked out where the CTA size cannot reach it)."""
UNROLL_FACTORS = (2, 4)
LOOP_UNROLLS = tuple(f"loop_unroll_{f}" for f in UNROLL_FACTORS)
"""chronos.transforms.loops.unroll by 2 or 4 (one of them: they share a group). Software pipelining has no
action: no version of it is legal by construction yet (why: the loops module's docstring)."""

L1_EVICTION_GROUPS = {f"l1_eviction_{c}": tuple(f"l1_{p}_{c}" for p in L1_EVICTIONS) for c in LOAD_CLASSES}
L2_POLICY_GROUPS = {f"l2_policy_{c}": tuple(f"l2_{p}_{c}" for p in L2_EVICTIONS) for c in LOAD_CLASSES}
V2_GROUPS: dict[str, tuple[str, ...]] = {
    **CONFLICT_GROUPS,
    "register_budget": (*CONFLICT_GROUPS["register_budget"], *(f"occ_ctas_{k}" for k in OCCUPANCY_TARGETS),
                        "maxnreg_uncapped"),
    **L1_EVICTION_GROUPS,
    **L2_POLICY_GROUPS,
    "l2_prefetch_size": tuple(f"l2_prefetch_{s}" for s in PREFETCH_SIZES),
    "store_eviction": tuple(f"st_l1_{p}" for p in L1_EVICTIONS),
    "loop_unroll": LOOP_UNROLLS,
}
"""The seed's groups, the occupancy targets joining register_budget, and one group per v2 family."""

_V2_HINTS = (*(a for g in (*L1_EVICTION_GROUPS.values(), *L2_POLICY_GROUPS.values()) for a in g),
             *V2_GROUPS["l2_prefetch_size"], *V2_GROUPS["store_eviction"])
_V2_BUDGETS = V2_GROUPS["register_budget"][len(CONFLICT_GROUPS["register_budget"]):]
V2_NAMES: tuple[str, ...] = (*ACTION_NAMES, *_V2_HINTS, *_V2_BUDGETS, *LOOP_UNROLLS)
"""The v2 logits: the seed's 21 (stop at 20), then the new actions."""

V2_CANONICAL_ORDER: tuple[str, ...] = (
    *LOOP_UNROLLS,  # loops reshape the body every later transform sees
    *CANONICAL_ORDER[:10], *_V2_HINTS,  # qualifiers: the seed's cache operators first (L1:: needs none)
    *CANONICAL_ORDER[10:], *_V2_BUDGETS,  # prefetches, reorders, and every register budget last
)


# ------------------------------------------------------------------ the space as a value
@dataclass(frozen=True)
class ActionSpace:
    """One action space: its logits' names, conflict groups and canonical order. `name` and `names` go
    into a checkpoint, so that a policy is never read against logits that mean something else."""

    name: str
    names: tuple[str, ...]
    groups: dict[str, tuple[str, ...]] = field(hash=False, compare=False)
    canonical_order: tuple[str, ...] = field(hash=False, compare=False)
    index: dict[str, int] = field(init=False, hash=False, compare=False)
    group_of: dict[str, str] = field(init=False, hash=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {a: i for i, a in enumerate(self.names)})
        object.__setattr__(self, "group_of", {a: g for g, members in self.groups.items() for a in members})
        assert len(self.index) == len(self.names) and self.index.get("stop") == STOP
        assert sorted(self.canonical_order) == sorted(a for a in self.names if a != "stop")
        assert set(self.group_of) <= set(self.index)

    @property
    def size(self) -> int:
        """Number of logits (transforms and stop)."""
        return len(self.names)

    @property
    def transforms(self) -> tuple[str, ...]:
        """Every name but stop, in logit order."""
        return tuple(a for a in self.names if a != "stop")

    def slots(self) -> tuple[tuple[str, ...], ...]:
        """The decision slots in canonical order: a group, or an ungrouped action on its own; each slot takes
        none or one of its actions."""
        out: dict[str, tuple[str, ...]] = {}
        for a in self.canonical_order:
            g = self.group_of.get(a)
            out.setdefault(g or a, self.groups[g] if g else (a,))
        return tuple(out.values())

    def check(self, name: str) -> str:
        if name not in self.index:
            raise UnknownActionError(f"unknown action {name!r} in the {self.name} space; expected one of: "
                                     f"{' '.join(self.names)}")
        return name


SEED = ActionSpace("seed", ACTION_NAMES, CONFLICT_GROUPS, CANONICAL_ORDER)
V2 = ActionSpace("v2", V2_NAMES, V2_GROUPS, V2_CANONICAL_ORDER)
SPACES: dict[str, ActionSpace] = {"seed": SEED, "v2": V2}
"""params.yaml's `actions` -> its space."""


def resolve_space(name: str | ActionSpace) -> ActionSpace:
    """The space called `name` (an ActionSpace is returned as is)."""
    if isinstance(name, ActionSpace):
        return name
    if name not in SPACES:
        raise UnknownActionError(f"unknown action space {name!r}; expected one of: {', '.join(SPACES)}")
    return SPACES[name]


def _applied_set(applied: Iterable[str] | None, space: ActionSpace = SEED) -> set[str]:
    """Validate and normalise a set/list/tuple of applied action names."""
    if applied is None:
        return set()
    if isinstance(applied, str):  # a bare string would otherwise be iterated character by character
        applied = (applied,)
    return {space.check(a) for a in applied}


def conflicts(action: str, applied: Iterable[str], space: ActionSpace = SEED) -> bool:
    """True when `action` shares a conflict group with a *different* action in `applied`.

    Re-applying the same action is not a conflict (the mask excludes it separately as "already applied").
    `stop` never conflicts. Unknown names raise UnknownActionError.
    """
    space.check(action)
    group = space.group_of.get(action)
    if group is None:
        _applied_set(applied, space)
        return False
    return any(space.group_of.get(a) == group and a != action for a in _applied_set(applied, space))


def get_action_mask(applied: Iterable[str] | None = (), legal: Iterable[str] | None = None,
                    space: ActionSpace = SEED) -> list[int]:
    """The 0/1 mask of allowed actions after `applied` (21 long in the seed space).

    An action is allowed (1) when it is not in `applied`, conflicts with nothing in `applied`, and, when
    `legal` (action names from a legality oracle) is given, is in `legal`. `stop` is always 1, so every
    mask has at least one allowed action.
    """
    done = _applied_set(applied, space)
    ok = None if legal is None else _applied_set(legal, space)
    used_groups = {space.group_of[a] for a in done if a in space.group_of}
    mask = []
    for name in space.names:
        if name == "stop":
            mask.append(1)
            continue
        allowed = name not in done and space.group_of.get(name) not in used_groups
        if ok is not None:
            allowed = allowed and name in ok
        mask.append(int(allowed))
    return mask


def get_action_history(applied: Iterable[str] | None = (), space: ActionSpace = SEED) -> list[int]:
    """The 0/1 vector with 1 at each applied action (order of application is not encoded)."""
    done = _applied_set(applied, space)
    return [int(name in done) for name in space.names]
