"""maxnreg_32/64/128/255: set (or replace) `.maxnreg N` on every entry.

`.maxnreg` and not ptxas's --maxrregcount: with `.reqntid` (which Triton always emits) --maxrregcount had
no effect on the H200 (PTX_NOTES.md). A budget is legal only if ptxas accepts the result for the module's
architecture — wgmma kernels, for one, refuse budgets under ~90 registers. The verdict is decided by ptxas
and cached by the sha256 of the PTX and the architecture.
"""

from __future__ import annotations

import dataclasses
import hashlib

from chronos.errors import NotApplicable, PtxasError
from chronos.ptx.ir import Function, Module
from chronos.ptx.printer import emit
from chronos.transforms.base import rewrite_functions

_VERDICTS: dict[tuple[str, str], str | None] = {}  # (sha256, arch) -> None if accepted, else ptxas's reason


def ptxas_verdict(ptx: str, arch: str) -> str | None:
    """None when ptxas accepts `ptx` for `arch`, else its first error line. Cached by PTX hash."""
    key = (hashlib.sha256(ptx.encode()).hexdigest(), arch)
    if key not in _VERDICTS:
        from chronos.toolchain import assemble  # deferred: only register budgets need ptxas

        try:
            assemble(ptx, arch)
            _VERDICTS[key] = None
        except PtxasError as e:
            _VERDICTS[key] = e.message
    return _VERDICTS[key]


def set_maxnreg(module: Module, budget: int, *, verify: bool = True) -> Module:
    """Set `.maxnreg budget` on every entry. With verify=False the ptxas verdict is left to whoever compiles
    the result (the exhaustive search does: its compile step records a refusal as an invalid variant)."""
    return set_entry_directive(module, ".maxnreg", str(budget), verify=verify)


def set_entry_directive(module: Module, name: str, value: str, *, verify: bool = True) -> Module:
    """Set the performance directive `name value` (.maxnreg, .minnctapersm) on every entry; legal only
    where it changes some entry and, with verify, ptxas accepts the result for the module's architecture."""
    if all(fn.directive(name) == value for fn in module.entries()):
        raise NotApplicable(f"every entry already has {name} {value}")

    def rewrite(fn: Function) -> Function:
        new = dataclasses.replace(fn, directives=list(fn.directives))
        new.set_directive(name, value)
        return new

    result = rewrite_functions(module, rewrite)
    if not verify:
        return result
    reason = ptxas_verdict(emit(result), module.arch)
    if reason is not None:
        raise NotApplicable(f"ptxas refuses {name} {value} for {module.arch}: {reason}")
    return result
