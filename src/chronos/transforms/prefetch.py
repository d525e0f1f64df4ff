"""prefetch_L1/L2: insert `prefetch.global.L1|L2 [base+off]` ahead of global loads.

One prefetch per 128-byte line (offset // 128), base register and value of the base (a redefinition of the
base starts new groups), at the group's lowest offset, guarded by the loads' own predicate, and placed as
early as its operands allow: right after the last definition of the base register or the guard inside the
loads' basic block (or at the block's start when both come from earlier blocks). Between that point and
the loads neither the base nor the guard changes, so the prefetch touches exactly a line the guarded load
itself will touch. Prefetches are hints: they never fault and never change results.

Legal by construction: a group is prefetched only when its base and guard are surely defined at the
insertion point (by an unguarded definition earlier in the block, or on every CFG path into the block);
a load whose base may be undefined there (used before its definition, defined on one branch only) gets
no prefetch. Nothing is inserted above a `.reg` declaration or across a `{ }` scope boundary.
"""

from __future__ import annotations

from chronos.errors import NotApplicable
from chronos.ptx.analysis import BasicBlock, basic_blocks, defs_uses, memory_op
from chronos.ptx.ir import (
    Addr,
    Comment,
    Directive,
    Function,
    Instruction,
    Label,
    Module,
    Reg,
    RegDecl,
    ScopeClose,
    ScopeOpen,
    Statement,
)
from chronos.transforms.base import rewrite_bodies

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


def _sure_defs(body: list[Statement], block: BasicBlock) -> set[str]:
    """Registers the block writes unconditionally (a guarded write may not happen)."""
    out: set[str] = set()
    for s in body[block.start:block.end]:
        if isinstance(s, Instruction) and s.pred is None:
            out.update(defs_uses(s)[0])
    return out


def defined_on_entry(fn: Function, blocks: list[BasicBlock]) -> list[frozenset[str]]:
    """Per block, the registers written on every CFG path from the function's start to the block.

    A forward must-analysis: the first block and blocks without predecessors start from nothing; the
    others start from "everything" (None) and shrink to the intersection over their predecessors' exits
    until nothing changes (loops need several passes)."""
    body = fn.body or []
    gen = [_sure_defs(body, b) for b in blocks]
    into: list[frozenset[str] | None] = [None] * len(blocks)
    changed = True
    while changed:
        changed = False
        for b in blocks:
            if b.index == 0 or not b.preds:
                new: frozenset[str] | None = frozenset()
            else:
                exits = [None if into[p] is None else into[p] | gen[p] for p in b.preds]
                known = [e for e in exits if e is not None]
                new = frozenset.intersection(*known) if known else None
            if new != into[b.index]:
                into[b.index], changed = new, True
    return [frozenset() if s is None else s for s in into]


def _placement(body: list[Statement], block: BasicBlock, pos: int, ready: int) -> int:
    """Where a prefetch for the load at `pos` goes: after `ready` (the last in-block definition of its
    operands, -1 for none) or at the block's start, but never above a `.reg` or across a `{ }`."""
    at = ready + 1 if ready >= 0 else _block_start(body, block.start, pos)
    for q in range(pos - 1, at - 1, -1):
        if isinstance(body[q], (ScopeOpen, ScopeClose, RegDecl)):
            return q + 1
    return at


def _block_prefetches(body: list[Statement], block: BasicBlock, entry_defs: frozenset[str],
                      level: str) -> dict[int, list[Instruction]]:
    """The prefetches for one block's global loads, by insertion position."""
    groups: dict[tuple, int] = {}  # (base, pred, neg, line, base def, pred def) -> lowest offset
    placement: dict[tuple, int] = {}
    last_def: dict[str, int] = {}
    sure = set(entry_defs)  # registers surely defined at the current position
    for pos in range(block.start, block.end):
        s = body[pos]
        addr = _global_load(s)
        if addr is not None:
            base = addr.base.name
            regs = (base, s.pred) if s.pred else (base,)
            key = (base, s.pred, s.pred_neg, addr.offset // LINE_BYTES,
                   last_def.get(base, -1), last_def.get(s.pred, -1) if s.pred else -1)
            if key in groups:
                groups[key] = min(groups[key], addr.offset)
            elif all(r in sure for r in regs):
                groups[key] = addr.offset
                placement[key] = _placement(body, block, pos, max(key[4], key[5]))
        if isinstance(s, Instruction):
            defs = defs_uses(s)[0]
            for r in defs:
                last_def[r] = pos
            if s.pred is None:
                sure.update(defs)
    inserts: dict[int, list[Instruction]] = {}
    for key, offset in groups.items():
        base, pred, neg = key[:3]
        pf = Instruction(f"prefetch.global.{level}", [Addr(Reg(base), offset)], pred, neg,
                         origin=f"prefetch_{level}")
        inserts.setdefault(placement[key], []).append(pf)
    return inserts


def insert_prefetches(module: Module, level: str) -> Module:
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        body = fn.body or []
        blocks = basic_blocks(fn)
        entry_defs = defined_on_entry(fn, blocks)
        inserts: dict[int, list[Instruction]] = {}
        for block in blocks:
            inserts.update(_block_prefetches(body, block, entry_defs[block.index], level))
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
        if any(_global_load(s) for fn in module.entries() for s in fn.body or ()):
            raise NotApplicable("no global load's base register is surely defined where a prefetch could go")
        raise NotApplicable("no global loads with a register base address to prefetch")
    return result
