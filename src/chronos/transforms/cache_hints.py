"""cache_cs/cg/ca/cv on ld.global and st_cache_cs/wt/wb on st.global: set the cache operator.

Cache operators are performance hints (PTX ISA, "Cache Operators"): they never change results. An access is
eligible when it is a weak `.global` ld/st: accesses with `.volatile`, `.relaxed`, `.acquire`, `.release`,
`.mmio` or a scope are skipped (ptxas rejects a cache operator there), as are `ld.global.nc` loads.

Rule for `L1::` eviction priorities (ptxas: "cannot be combined" with a cache operator): an access that
carries one is left alone — the producer asked for that L1 policy explicitly and a hint transform never
discards information. `L2::` qualifiers (cache_hint, 64B/128B/256B prefetch size) combine with a cache
operator and are kept. An existing cache operator is replaced.
"""

from __future__ import annotations

from chronos.errors import NotApplicable
from chronos.ptx.analysis import memory_op
from chronos.ptx.ir import Function, Instruction, Module, Statement
from chronos.transforms.base import rewrite_bodies

LOAD_OPS = ("ca", "cg", "cs", "lu", "cv")
STORE_OPS = ("wb", "cg", "cs", "wt")


def _with_cop(ins: Instruction, kind: str, cop: str) -> Instruction | None:
    """The access with cache operator `cop`, or None if it is not eligible or would not change."""
    if ins.op != kind:
        return None
    mem = memory_op(ins)
    mods = list(ins.mods)
    if mem is None or mem.space != "global" or mem.volatile or "nc" in mods:
        return None
    if any(m.startswith("L1::") for m in mods):
        return None
    existing = LOAD_OPS if kind == "ld" else STORE_OPS
    mods = [m for m in mods if m not in existing]
    mods.insert(mods.index("global") + 1, cop)
    opcode = ".".join([ins.op, *mods])
    return None if opcode == ins.opcode else ins.with_opcode(opcode)


def set_cache_operator(module: Module, kind: str, cop: str) -> Module:
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        out: list[Statement] = []
        for s in fn.body or []:
            new = _with_cop(s, kind, cop) if isinstance(s, Instruction) else None
            changed |= new is not None
            out.append(new or s)
        return out

    result = rewrite_bodies(module, rewrite)
    if not changed:
        what = "ld.global" if kind == "ld" else "st.global"
        raise NotApplicable(f"no eligible {what} access would change to .{cop}")
    return result
