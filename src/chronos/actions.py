"""The action space: 20 PTX transforms plus `stop`, their conflict groups, the mask and the history.

The names and their order are the seed's (shared/SEED.md) and index the policy's 21 logits, so they are
part of the checkpoint format: never reorder them.

An action is *masked out* (0 in the mask) when it was already applied, when another member of its conflict
group was applied (one cache hint, one register budget, one reorder, one prefetch at most), or when a
legality oracle (`chronos.transforms.legal_actions`) says it would not change the kernel legally. `stop` is
always allowed so that a rollout can always end.
"""

from __future__ import annotations

from collections.abc import Iterable

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
"""The 21 action names, in the order of the policy's logits."""

NUM_ACTIONS = len(ACTION_NAMES)
"""21: 20 transforms plus stop."""

ACTION_INDEX: dict[str, int] = {name: i for i, name in enumerate(ACTION_NAMES)}
"""Action name -> logit index."""

STOP = ACTION_INDEX["stop"]
"""Index of the `stop` action (20)."""

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

assert NUM_ACTIONS == 21 and STOP == 20


def _check(name: str) -> str:
    if name not in ACTION_INDEX:
        raise UnknownActionError(f"unknown action {name!r}; expected one of: {' '.join(ACTION_NAMES)}")
    return name


def _applied_set(applied: Iterable[str] | None) -> set[str]:
    """Validate and normalise a set/list/tuple of applied action names."""
    if applied is None:
        return set()
    if isinstance(applied, str):  # a bare string would otherwise be iterated character by character
        applied = (applied,)
    return {_check(a) for a in applied}


def conflicts(action: str, applied: Iterable[str]) -> bool:
    """True when `action` shares a conflict group with a *different* action in `applied`.

    Re-applying the same action is not a conflict (the mask excludes it separately as "already applied").
    `stop` never conflicts. Unknown names raise UnknownActionError.
    """
    _check(action)
    group = GROUP_OF.get(action)
    if group is None:
        _applied_set(applied)
        return False
    return any(GROUP_OF.get(a) == group and a != action for a in _applied_set(applied))


def get_action_mask(applied: Iterable[str] | None = (), legal: Iterable[str] | None = None) -> list[int]:
    """The 21-long 0/1 mask of allowed actions after `applied`.

    An action is allowed (1) when it is not in `applied`, conflicts with nothing in `applied`, and, when
    `legal` (action names from a legality oracle) is given, is in `legal`. `stop` is always 1, so every
    mask has at least one allowed action.
    """
    done = _applied_set(applied)
    ok = None if legal is None else _applied_set(legal)
    used_groups = {GROUP_OF[a] for a in done if a in GROUP_OF}
    mask = []
    for name in ACTION_NAMES:
        if name == "stop":
            mask.append(1)
            continue
        allowed = name not in done and GROUP_OF.get(name) not in used_groups
        if ok is not None:
            allowed = allowed and name in ok
        mask.append(int(allowed))
    return mask


def get_action_history(applied: Iterable[str] | None = ()) -> list[int]:
    """The 21-long 0/1 vector with 1 at each applied action (order of application is not encoded)."""
    done = _applied_set(applied)
    return [int(name in done) for name in ACTION_NAMES]
