"""prefetch_L1/L2: insert `prefetch.global.L1|L2 [base+off]` ahead of global loads.

One prefetch per 128-byte line (offset // 128) and base register, at the group's lowest offset, guarded by
the loads' own predicate, and placed as early as its operands allow: right after the last definition of
the base register or the guard inside the loads' basic block (or at the block's start when both come from
earlier blocks). Between that point and the loads neither the base nor the guard changes, so the prefetch
touches exactly a line the guarded load itself will touch. Prefetches are hints: they never fault and never
change results.
"""

from __future__ import annotations

from chronos.ptx.analysis import basic_blocks, defs_uses, memory_op
from chronos.ptx.ir import (
    Addr,
    Comment,
    Directive,
    Function,
    Instruction,
    Label,
    Module,
    Reg,
    ScopeClose,
    ScopeOpen,
    Statement,
)
from chronos.transforms.base import NotApplicable, rewrite_bodies

LINE_BYTES = 128


def _global_load(s: Statement) -> Addr | None:
    if not isinstance(s, Instruction) or s.op != "ld":
        return None
    mem = memory_op(s)
    if mem is None or mem.space != "global" or mem.volatile or mem.addr is None:
        return None
    return mem.addr if isinstance(mem.addr.base, Reg) else None


def _block_start(body: list[Statement], start: int, end: int) -> int:
    """First position in a block after its labels (and the comments/.loc between them)."""
    i = start
    while i < end and isinstance(body[i], (Label, Comment, Directive)) and not (
            isinstance(body[i], Comment) and body[i].inline_asm):
        i += 1
    return i


def insert_prefetches(module: Module, level: str) -> Module:
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        body = fn.body or []
        inserts: dict[int, list[Instruction]] = {}
        for block in basic_blocks(fn):
            groups: dict[tuple, tuple[int, int]] = {}  # (base, pred, neg, line) -> (lowest offset, first pos)
            last_def: dict[str, int] = {}
            placement: dict[tuple, int] = {}
            for pos in range(block.start, block.end):
                s = body[pos]
                addr = _global_load(s)
                if addr is not None:
                    key = (addr.base.name, s.pred, s.pred_neg, addr.offset // LINE_BYTES)
                    if key not in groups:
                        ready = max(last_def.get(addr.base.name, -1), last_def.get(s.pred, -1) if s.pred else -1)
                        at = ready + 1 if ready >= 0 else _block_start(body, block.start, pos)
                        # never hoist out of (or into) a `{ }` scope: its registers live only inside it
                        for q in range(pos - 1, at - 1, -1):
                            if isinstance(body[q], (ScopeOpen, ScopeClose)):
                                at = q + 1
                                break
                        placement[key] = at
                        groups[key] = (addr.offset, pos)
                    else:
                        groups[key] = (min(groups[key][0], addr.offset), groups[key][1])
                if isinstance(s, Instruction):
                    for r in defs_uses(s)[0]:
                        last_def[r] = pos
            for key, (offset, _pos) in groups.items():
                base, pred, neg = key[:3]
                pf = Instruction(f"prefetch.global.{level}", [Addr(Reg(base), offset)], pred, neg,
                                 origin=f"prefetch_{level}")
                inserts.setdefault(placement[key], []).append(pf)
        if not inserts:
            return None
        changed = True
        out: list[Statement] = []
        for i, s in enumerate(body):
            out.extend(inserts.get(i, ()))
            out.append(s)
        out.extend(inserts.get(len(body), ()))
        return out

    result = rewrite_bodies(module, rewrite)
    if not changed:
        raise NotApplicable("no global loads with a register base address to prefetch")
    return result
