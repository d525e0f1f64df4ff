"""The 20 PTX transforms, legal by construction.

`apply(module, action)` is pure and deterministic: it returns a new Module (sharing unchanged statements
with the input, which is never mutated) whose `applied` records the action. It raises IllegalActionError
when the action is already applied, conflicts with an applied action, or cannot change the kernel in a
way that is proven safe. `legal_actions(module, applied)` lists the transforms `apply` would accept;
with `stop` (always legal) it is the policy's action mask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from chronos.actions import ACTION_NAMES, GROUP_OF, conflicts
from chronos.errors import IllegalActionError, NotApplicable, UnknownActionError
from chronos.ptx.ir import Module
from chronos.transforms.cache_hints import set_cache_operator
from chronos.transforms.prefetch import insert_prefetches
from chronos.transforms.register_budget import set_maxnreg
from chronos.transforms.reorder import reorder
from chronos.transforms.vectorize import split_ld, vec_ld, vec_st

TRANSFORMS: dict[str, Callable[[Module], Module]] = {
    "vec_ld": vec_ld,
    "vec_st": vec_st,
    "split_ld": split_ld,
    **{f"cache_{c}": (lambda m, c=c: set_cache_operator(m, "ld", c)) for c in ("cs", "cg", "ca", "cv")},
    **{f"st_cache_{c}": (lambda m, c=c: set_cache_operator(m, "st", c)) for c in ("cs", "wt", "wb")},
    **{f"maxnreg_{n}": (lambda m, n=n: set_maxnreg(m, n)) for n in (32, 64, 128, 255)},
    **{f"reorder_{h}": (lambda m, h=h: reorder(m, h)) for h in ("cp", "il", "lf", "sl")},
    "prefetch_L1": lambda m: insert_prefetches(m, "L1"),
    "prefetch_L2": lambda m: insert_prefetches(m, "L2"),
}
TRANSFORM_NAMES: tuple[str, ...] = tuple(a for a in ACTION_NAMES if a != "stop")
assert set(TRANSFORMS) == set(TRANSFORM_NAMES)

__all__ = ["TRANSFORMS", "TRANSFORM_NAMES", "apply", "apply_sequence", "legal_actions", "refusals"]


def _kernel_name(module: Module) -> str:
    entries = module.entries()
    name = ",".join(e.name for e in entries) or "<no entry>"
    return f"{module.source}:{name}" if module.source else name


def _precheck(module: Module, action: str, applied: Iterable[str]) -> str | None:
    applied = tuple(applied)
    if action in applied:
        return "already applied"
    if conflicts(action, applied):
        other = next(a for a in applied if GROUP_OF.get(a) == GROUP_OF[action])
        return f"conflicts with {other} (group {GROUP_OF[action]})"
    if not module.entries():
        return "the module has no .entry with a body"
    return None


def apply(module: Module, action: str, *, defer_ptxas: bool = False) -> Module:
    """Apply one transform; raise IllegalActionError (with the reason) when it is not legal.

    defer_ptxas=True skips the ptxas verdict on register budgets: the caller compiles the result anyway and
    must treat a ptxas refusal as an illegal variant (the exhaustive search does, to avoid one ptxas run
    per budget per prefix)."""
    if action not in TRANSFORMS:
        if action == "stop":
            raise IllegalActionError(action, "stop is not a transform", kernel=_kernel_name(module))
        raise UnknownActionError(f"unknown action {action!r}; expected one of: {' '.join(TRANSFORM_NAMES)}")
    reason = _precheck(module, action, module.applied)
    if reason is None:
        try:
            if defer_ptxas and action.startswith("maxnreg_"):
                out = set_maxnreg(module, int(action.split("_")[1]), verify=False)
            else:
                out = TRANSFORMS[action](module)
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


def refusals(module: Module, applied: Iterable[str] = (), *, defer_ptxas: bool = False) -> dict[str, str]:
    """For every transform, why it is illegal now (legal ones are absent). defer_ptxas: see `apply`."""
    applied = tuple(dict.fromkeys((*module.applied, *applied)))
    probe = dataclasses.replace(module, applied=applied)
    out: dict[str, str] = {}
    for action in TRANSFORM_NAMES:
        reason = _precheck(probe, action, applied)
        if reason is None:
            try:
                if defer_ptxas and action.startswith("maxnreg_"):
                    set_maxnreg(probe, int(action.split("_")[1]), verify=False)
                else:
                    TRANSFORMS[action](probe)
                continue
            except NotApplicable as e:
                reason = str(e)
        out[action] = reason
    return out


def legal_actions(module: Module, applied: Iterable[str] = (), *, defer_ptxas: bool = False) -> list[str]:
    """The transforms `apply` would accept on `module` after `applied`, in ACTION_NAMES order."""
    refused = refusals(module, applied, defer_ptxas=defer_ptxas)
    return [a for a in TRANSFORM_NAMES if a not in refused]
