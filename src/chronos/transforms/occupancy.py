"""Action space v2 (issue #14), register budgets as occupancy targets: for a kernel's threads per CTA, the
largest per-thread budget at which k CTAs fit on an SM, for every feasible k.

The seed's four budgets (32/64/128/255) miss the ones that matter: cross_entropy_bf16 ran 6.4% faster at 64
registers (4 CTAs/SM kept) and not at all at 77. On sm_80-sm_90 an SM has 65,536 registers, allocated per
warp in units of 256 (8 per thread), at most 2,048 threads and 32 CTAs; a budget below what some
instructions need is refused by ptxas (set_maxnreg decides with ptxas, as for the seed's budgets).
"""

from __future__ import annotations

import dataclasses
import re

from chronos.errors import NotApplicable
from chronos.gpu import MAX_CTAS_PER_SM, MAX_REGS_PER_THREAD, MAX_THREADS_PER_SM, REGS_PER_SM
from chronos.gpu import REG_GRANULE as GRANULE
from chronos.ptx.ir import Function, Module
from chronos.transforms.base import rewrite_functions
from chronos.transforms.register_budget import set_entry_directive, set_maxnreg

REGISTER_CAPS = (".maxnreg", ".minnctapersm")
# the SM limits (chronos.gpu, with their sources): REGS_PER_SM, MAX_THREADS_PER_SM, MAX_CTAS_PER_SM,
# MAX_REGS_PER_THREAD, GRANULE


def threads_per_cta(module: Module) -> int:
    """The entry's CTA size from `.reqntid` or `.maxntid` (Triton always writes .reqntid)."""
    for fn in module.entries():
        for key, value in fn.directives:
            if key in (".reqntid", ".maxntid"):
                dims = [int(x) for x in re.findall(r"\d+", value)]
                n = 1
                for d in dims:
                    n *= d
                return n
    raise NotApplicable("no .reqntid or .maxntid: the CTA size, and so the occupancy, is unknown")


def ctas_per_sm(threads: int, regs: int) -> int:
    """CTAs of `threads` threads that fit on one SM at `regs` registers per thread (registers and thread
    slots only; shared memory is the kernel's own and no register budget changes it)."""
    warps = -(-threads // 32)
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    return min(MAX_CTAS_PER_SM, MAX_THREADS_PER_SM // threads, REGS_PER_SM // (per_warp * warps))


def occupancy_budgets(threads: int) -> dict[int, int]:
    """{k: the largest budget (a multiple of 8, at most 255) at which k CTAs fit}, for every k that some
    budget reaches; budgets that give the same k collapse to the largest."""
    out: dict[int, int] = {}
    top = MAX_REGS_PER_THREAD // GRANULE * GRANULE
    for regs in (MAX_REGS_PER_THREAD, *range(top, GRANULE - 1, -GRANULE)):
        k = ctas_per_sm(threads, regs)
        if k >= 1:
            out.setdefault(k, regs)
    return dict(sorted(out.items()))


def occupancy_target(module: Module, ctas: int, *, verify: bool = True) -> Module:
    """`.maxnreg` = the largest budget at which `ctas` CTAs fit on an SM (ptxas must accept it; verify=False
    leaves that to whoever compiles the result, as for set_maxnreg)."""
    budgets = occupancy_budgets(threads_per_cta(module))
    if ctas not in budgets:
        raise NotApplicable(f"{ctas} CTAs/SM is out of reach at {threads_per_cta(module)} threads per CTA "
                            f"(reachable: {sorted(budgets)})")
    return set_maxnreg(module, budgets[ctas], verify=verify)


def min_ctas_per_sm(module: Module, ctas: int) -> Module:
    """`.minnctapersm ctas`: the same target spelt for ptxas, which then picks the registers itself (and
    may spill to meet it); it needs the CTA size, which `.reqntid`/`.maxntid` give."""
    budgets = occupancy_budgets(threads_per_cta(module))
    if ctas not in budgets:
        raise NotApplicable(f"{ctas} CTAs/SM is out of reach (reachable: {sorted(budgets)})")
    return set_entry_directive(module, ".minnctapersm", str(ctas))


def uncap_registers(module: Module) -> Module:
    """Remove every register cap (`.maxnreg`, `.minnctapersm`): ptxas then uses what the CTA size allows.
    Legal only where some entry has one (the producer's, e.g. Triton's maxnreg option)."""
    if not any(fn.directive(d) is not None for fn in module.entries() for d in REGISTER_CAPS):
        raise NotApplicable("no entry has a register cap (.maxnreg or .minnctapersm) to remove")

    def rewrite(fn: Function) -> Function:
        new = dataclasses.replace(fn, directives=list(fn.directives))
        for d in REGISTER_CAPS:
            new.set_directive(d, None)
        return new

    return rewrite_functions(module, rewrite)
