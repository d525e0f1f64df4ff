"""Invariant checks shared by the transform tests."""

from __future__ import annotations

from chronos.ptx import Instruction, Module
from chronos.ptx.analysis import is_ordering_point, memory_op
from chronos.ptx.ir import Addr, Comment, Directive, Reg, Vec
from chronos.transforms.reorder import dependency_dag


def global_accesses(module: Module, op: str) -> set[tuple]:
    """(guard, base, byte offset, register) for every element of every global ld/st: vectors expanded."""
    out = set()
    for fn in module.entries():
        for ins in fn.instructions():
            mem = memory_op(ins)
            if ins.op != op or mem is None or mem.space != "global" or not isinstance(mem.addr, Addr):
                continue
            data = ins.operands[0] if op == "ld" else ins.operands[1]
            elems = data.elems if isinstance(data, Vec) else (data,)
            eb = mem.bits // 8
            for k, e in enumerate(elems):
                name = e.name if isinstance(e, Reg) else str(e)
                out.add((ins.pred, ins.pred_neg, str(mem.addr.base), mem.addr.offset + k * eb, name))
    return out


def segments(body) -> list[list]:
    """Split a body at the statements a reorder must keep in place; each segment is its instructions."""
    segs, cur = [], []
    for s in body:
        attached = (isinstance(s, Comment) and s.inline_asm is None) or (
            isinstance(s, Directive) and s.keyword == ".loc")
        if isinstance(s, Instruction) and not is_ordering_point(s):
            cur.append(s)
        elif not attached:
            segs.append(cur)
            segs.append([s])
            cur = []
    segs.append(cur)
    return segs


def assert_reorder_invariants(before: Module, after: Module) -> None:
    for f0, f1 in zip(before.entries(), after.entries(), strict=True):
        s0, s1 = segments(f0.body), segments(f1.body)
        assert len(s0) == len(s1), f"{f0.name}: ordering points moved"
        for a, b in zip(s0, s1, strict=True):
            assert sorted(map(id, a)) == sorted(map(id, b)), f"{f0.name}: an instruction left its region"
            if len(a) < 2:
                continue
            pos = {id(x): i for i, x in enumerate(b)}
            for j, preds in enumerate(dependency_dag(a)):
                for i in preds:
                    assert pos[id(a[i])] < pos[id(a[j])], f"{f0.name}: dependency {a[i]} -> {a[j]} broken"


def assert_only_qualifiers_changed(before: Module, after: Module, allowed: set[str]) -> None:
    for f0, f1 in zip(before.entries(), after.entries(), strict=True):
        assert len(f0.body) == len(f1.body)
        for s0, s1 in zip(f0.body, f1.body, strict=True):
            if not isinstance(s0, Instruction):
                assert s0 == s1
                continue
            assert (s0.operands, s0.pred, s0.pred_neg, s0.op) == (s1.operands, s1.pred, s1.pred_neg, s1.op)
            diff = set(s0.mods) ^ set(s1.mods)
            assert diff <= allowed, f"{s0.opcode} -> {s1.opcode}"
