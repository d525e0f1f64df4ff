"""The PTX transforms of both action spaces (chronos.actions), legal by construction.

`apply(module, action)` is pure and deterministic: it returns a new Module (sharing unchanged statements
with the input, which is never mutated) whose `applied` records the action. It raises IllegalActionError
when the action is already applied, conflicts with an applied action, or cannot change the kernel in a
way that is proven safe. `legal_actions(module, applied, space=...)` lists the transforms `apply` would
accept, in the space's logit order; with `stop` (always legal) it is the policy's action mask.

`apply` takes any action of either space and checks conflicts with v2's groups, which are the seed's plus
new ones (the occupancy targets join register_budget), so a set of seed actions gets the seed's verdicts.
The extension point is `TRANSFORMS`: one entry per action name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from chronos.actions import (
    L1_EVICTIONS,
    L2_EVICTIONS,
    LOAD_CLASSES,
    OCCUPANCY_TARGETS,
    PREFETCH_SIZES,
    SEED,
    UNROLL_FACTORS,
    V2,
    ActionSpace,
    conflicts,
)
from chronos.errors import IllegalActionError, NotApplicable, UnknownActionError
from chronos.ptx.ir import Module
from chronos.transforms.cache_hints import set_cache_operator
from chronos.transforms.cache_policy import l1_eviction, l2_policy, prefetch_size, store_eviction
from chronos.transforms.loops import unroll
from chronos.transforms.occupancy import occupancy_target, uncap_registers
from chronos.transforms.prefetch import insert_prefetches
from chronos.transforms.register_budget import set_maxnreg
from chronos.transforms.reorder import reorder
from chronos.transforms.vectorize import split_ld, vec_ld, vec_st

PTXAS_DECIDED: dict[str, Callable[[Module, bool], Module]] = {
    **{f"maxnreg_{n}": (lambda m, v, n=n: set_maxnreg(m, n, verify=v)) for n in (32, 64, 128, 255)},
    **{f"occ_ctas_{k}": (lambda m, v, k=k: occupancy_target(m, k, verify=v)) for k in OCCUPANCY_TARGETS},
    **{f"loop_unroll_{f}": (lambda m, v, f=f: unroll(m, f, verify=v)) for f in UNROLL_FACTORS},
}
"""Transforms whose legality ptxas decides (register budgets; an unrolled body under a budget), which
`defer_ptxas` may leave to the compile step: (module, verify) -> module."""

TRANSFORMS: dict[str, Callable[[Module], Module]] = {
    "vec_ld": vec_ld,
    "vec_st": vec_st,
    "split_ld": split_ld,
    **{f"cache_{c}": (lambda m, c=c: set_cache_operator(m, "ld", c)) for c in ("cs", "cg", "ca", "cv")},
    **{f"st_cache_{c}": (lambda m, c=c: set_cache_operator(m, "st", c)) for c in ("cs", "wt", "wb")},
    **{a: (lambda m, f=f: f(m, True)) for a, f in PTXAS_DECIDED.items()},
    **{f"reorder_{h}": (lambda m, h=h: reorder(m, h)) for h in ("cp", "il", "lf", "sl")},
    "prefetch_L1": lambda m: insert_prefetches(m, "L1"),
    "prefetch_L2": lambda m: insert_prefetches(m, "L2"),
    # action space v2
    **{f"l1_{p}_{c}": (lambda m, p=p, c=c: l1_eviction(m, p, c)) for p in L1_EVICTIONS for c in LOAD_CLASSES},
    **{f"l2_{p}_{c}": (lambda m, p=p, c=c: l2_policy(m, p, c)) for p in L2_EVICTIONS for c in LOAD_CLASSES},
    **{f"l2_prefetch_{s}": (lambda m, s=s: prefetch_size(m, s)) for s in PREFETCH_SIZES},
    **{f"st_l1_{p}": (lambda m, p=p: store_eviction(m, p)) for p in L1_EVICTIONS},
    "maxnreg_uncapped": uncap_registers,
}
TRANSFORM_NAMES: tuple[str, ...] = SEED.transforms
"""The seed's 20 transforms, in ACTION_NAMES order."""
assert set(TRANSFORMS) == set(V2.transforms)

__all__ = ["TRANSFORMS", "TRANSFORM_NAMES", "apply", "apply_sequence", "legal_actions", "refusals"]


def _kernel_name(module: Module) -> str:
    entries = module.entries()
    name = ",".join(e.name for e in entries) or "<no entry>"
    return f"{module.source}:{name}" if module.source else name


def _precheck(module: Module, action: str, applied: Iterable[str]) -> str | None:
    applied = tuple(applied)
    if action in applied:
        return "already applied"
    if conflicts(action, applied, V2):
        group = V2.group_of[action]
        other = next(a for a in applied if V2.group_of.get(a) == group)
        return f"conflicts with {other} (group {group})"
    if not module.entries():
        return "the module has no .entry with a body"
    return None


def _transform(module: Module, action: str, defer_ptxas: bool) -> Module:
    if defer_ptxas and action in PTXAS_DECIDED:
        return PTXAS_DECIDED[action](module, False)
    return TRANSFORMS[action](module)


def apply(module: Module, action: str, *, defer_ptxas: bool = False) -> Module:
    """Apply one transform; raise IllegalActionError (with the reason) when it is not legal.

    defer_ptxas=True skips the ptxas verdict on register budgets and unrolls: the caller compiles the result
    anyway and must treat a ptxas refusal as an illegal variant (the exhaustive search does, to avoid one
    ptxas run per budget per prefix)."""
    if action not in TRANSFORMS:
        if action == "stop":
            raise IllegalActionError(action, "stop is not a transform", kernel=_kernel_name(module))
        raise UnknownActionError(f"unknown action {action!r}; expected one of: {' '.join(V2.transforms)}")
    reason = _precheck(module, action, module.applied)
    if reason is None:
        try:
            out = _transform(module, action, defer_ptxas)
        except NotApplicable as e:
            reason = str(e)
        else:
            return dataclasses.replace(out, applied=(*module.applied, action))
    raise IllegalActionError(action, reason, kernel=_kernel_name(module),
                             repro=f"chronos.transforms.apply(parse(ptx), {action!r})")


def apply_sequence(module: Module, actions: Iterable[str]) -> Module:
    """Apply actions in order (`stop` ends the sequence)."""
    for a in actions:
        if a == "stop":
            break
        module = apply(module, a)
    return module


def refusals(module: Module, applied: Iterable[str] = (), *, defer_ptxas: bool = False,
             space: ActionSpace = SEED) -> dict[str, str]:
    """For every transform of `space`, why it is illegal now (legal ones are absent). defer_ptxas: see
    `apply`."""
    applied = tuple(dict.fromkeys((*module.applied, *applied)))
    probe = dataclasses.replace(module, applied=applied)
    out: dict[str, str] = {}
    for action in space.transforms:
        reason = _precheck(probe, action, applied)
        if reason is None:
            try:
                _transform(probe, action, defer_ptxas)
                continue
            except NotApplicable as e:
                reason = str(e)
        out[action] = reason
    return out


def legal_actions(module: Module, applied: Iterable[str] = (), *, defer_ptxas: bool = False,
                  space: ActionSpace = SEED) -> list[str]:
    """The transforms of `space` that `apply` would accept on `module` after `applied`, in logit order."""
    refused = refusals(module, applied, defer_ptxas=defer_ptxas, space=space)
    return [a for a in space.transforms if a not in refused]
