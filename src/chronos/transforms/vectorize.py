"""vec_ld, vec_st, split_ld: merge contiguous scalar global accesses into .v2/.v4, or split vector loads.

Merging is legal only where the first address is *proven* aligned to the whole vector (alignment.py), the
accesses share base register, guard, type and qualifiers, and moving them together crosses nothing that
matters: loads move up to the first member, stores down to the last; no member moves across an ordering
point, a label, a redefinition of its base, guard or data registers, or (for loads) a global/generic store
or (for stores) any other global/generic access — which could alias.

split_ld leaves alone the vector loads that vec_ld created, and vec_ld the scalar loads that split_ld
created: applying both never undoes either on the same accesses.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from chronos.errors import NotApplicable
from chronos.ptx.analysis import _TYPE_BITS, defs_uses, is_ordering_point, memory_op
from chronos.ptx.ir import Addr, Function, Instruction, Label, Module, Reg, Statement, Sym, Vec
from chronos.transforms.alignment import Congruence
from chronos.transforms.base import rewrite_bodies

_VEC_BYTES = 16  # the widest vector access sm_89/sm_90 allow


@dataclass
class _Access:
    pos: int
    ins: Instruction
    base: str
    offset: int
    data: str  # the loaded/stored register
    bytes: int

    @property
    def key(self) -> tuple:
        return (self.ins.opcode, self.base, self.ins.pred, self.ins.pred_neg)


def _scalar_access(ins: Instruction, pos: int, kind: str, skip_origin: str) -> _Access | None:
    """The access if `ins` is a plain scalar global load/store that may join a vector, else None."""
    if ins.op != kind or (skip_origin and ins.origin == skip_origin) or len(ins.operands) != 2:
        return None
    mem = memory_op(ins)
    if (mem is None or mem.space != "global" or mem.vector != 1 or mem.volatile
            or mem.bits not in (16, 32, 64)):
        return None
    if ins.mods[-1] not in _TYPE_BITS:
        return None
    addr, data = (ins.operands[1], ins.operands[0]) if kind == "ld" else (ins.operands[0], ins.operands[1])
    if not (isinstance(addr, Addr) and isinstance(addr.base, Reg) and isinstance(data, Reg)):
        return None
    if data.name == addr.base.name or data.name == ins.pred:
        return None
    return _Access(pos, ins, addr.base.name, addr.offset, data.name, mem.bits // 8)


def _is_barrier_for(s: Statement, kind: str) -> bool:
    """Statements that end a merge window: ordering points, labels, and accesses that may alias."""
    if isinstance(s, Label) or is_ordering_point(s):
        return True
    if not isinstance(s, Instruction):
        return False
    mem = memory_op(s)
    if mem is None or mem.space not in ("global", "generic"):
        return False
    if kind == "ld":
        return mem.kind != "load" and mem.kind != "prefetch"
    return True  # stores: any other global access may alias (same-key stores are members, not barriers)


def _windows(body: list[Statement], kind: str, skip_origin: str) -> list[list[_Access]]:
    """Runs of candidate accesses with nothing between them that may alias or order."""
    out: list[list[_Access]] = []
    cur: list[_Access] = []
    key = None
    for pos, s in enumerate(body):
        acc = _scalar_access(s, pos, kind, skip_origin) if isinstance(s, Instruction) else None
        if acc is not None and (kind == "ld" or key is None or acc.key == key):
            cur.append(acc)
            key = acc.key
            continue
        if acc is not None or _is_barrier_for(s, kind):
            if cur:
                out.append(cur)
            cur = [acc] if acc is not None else []
            key = acc.key if acc is not None else None
    if cur:
        out.append(cur)
    return out


def _can_move(body: list[Statement], acc: _Access, to: int, members: set[int]) -> bool:
    """Can `acc` move from its position to `to` (before it for loads, after it for stores)?"""
    lo, hi = (to, acc.pos) if to < acc.pos else (acc.pos + 1, to + 1)
    fixed = {acc.base, acc.ins.pred} - {None}
    for p in range(lo, hi):
        if p == acc.pos:
            continue
        s = body[p]
        if not isinstance(s, Instruction):
            continue
        d, u = defs_uses(s)
        if fixed & set(d):
            return False
        if acc.data in d or (acc.ins.op == "ld" and acc.data in u and p not in members):
            return False
    return True


def _plan(body: list[Statement], group: list[_Access], cong: Congruence, kind: str) -> list[list[_Access]]:
    """Split one key's accesses into vectors: contiguous, aligned, movable; widest first."""
    group = sorted(group, key=lambda a: a.offset)
    if len({a.offset for a in group}) != len(group) or len({a.data for a in group}) != len(group):
        return []  # duplicated offsets or registers: keep it simple and leave them scalar
    vectors: list[list[_Access]] = []
    i = 0
    while i < len(group):
        for width in (4, 2):
            run = group[i:i + width]
            eb = run[0].bytes
            if len(run) < width or width * eb > _VEC_BYTES:
                continue
            if any(b.offset - a.offset != eb for a, b in itertools.pairwise(run)):
                continue
            if not cong.aligned(Addr(Reg(run[0].base), run[0].offset), width * eb):
                continue
            to = min(a.pos for a in run) if kind == "ld" else max(a.pos for a in run)
            members = {a.pos for a in run}
            if all(_can_move(body, a, to, members) for a in run):
                vectors.append(run)
                i += width
                break
        else:
            i += 1
    return vectors


def _vector_ins(run: list[_Access], kind: str) -> Instruction:
    first = run[0].ins
    mods = list(first.mods)
    opcode = ".".join([first.op, *mods[:-1], f"v{len(run)}", mods[-1]])
    vec = Vec(tuple(Reg(a.data) for a in run))
    addr = Addr(Reg(run[0].base), run[0].offset)
    ops = [vec, addr] if kind == "ld" else [addr, vec]
    return Instruction(opcode, ops, first.pred, first.pred_neg, first.line, origin=f"vec_{kind}")


def _merge(module: Module, kind: str) -> Module:
    skip = "split_ld" if kind == "ld" else ""
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        body = fn.body or []
        cong = None
        replace: dict[int, Instruction | None] = {}
        for window in _windows(body, kind, skip):
            keys: dict[tuple, list[_Access]] = {}
            for a in window:
                keys.setdefault(a.key, []).append(a)
            for group in keys.values():
                if len(group) < 2:
                    continue
                cong = cong or Congruence(module, fn)
                for run in _plan(body, group, cong, kind):
                    at = min(a.pos for a in run) if kind == "ld" else max(a.pos for a in run)
                    for a in run:
                        replace[a.pos] = None
                    replace[at] = _vector_ins(run, kind)
        if not replace:
            return None
        changed = True
        return [replace.get(i, s) for i, s in enumerate(body) if replace.get(i, s) is not None]

    out = rewrite_bodies(module, rewrite)
    if not changed:
        raise NotApplicable(f"no contiguous scalar global {'loads' if kind == 'ld' else 'stores'} "
                            "with a provably aligned first address")
    return out


def vec_ld(module: Module) -> Module:
    return _merge(module, "ld")


def vec_st(module: Module) -> Module:
    return _merge(module, "st")


def _split(ins: Instruction) -> list[Instruction] | None:
    if ins.op != "ld" or ins.origin == "vec_ld" or len(ins.operands) < 2:
        return None
    mem = memory_op(ins)
    vec, addr = ins.operands[0], ins.operands[1]
    if mem is None or mem.space != "global" or mem.vector not in (2, 4) or mem.volatile:
        return None
    if not isinstance(vec, Vec) or not isinstance(addr, Addr) or len(vec.elems) != mem.vector:
        return None
    half = mem.vector // 2
    lo, hi = vec.elems[:half], vec.elems[half:]
    if isinstance(addr.base, Reg) and any(isinstance(e, Reg) and e.name == addr.base.name for e in lo):
        return None  # the first half would overwrite the address of the second
    mods = [m for m in ins.mods if m not in ("v2", "v4")]
    if half == 2:
        mods.insert(len(mods) - 1, "v2")
    opcode = ".".join([ins.op, *mods])
    out = []
    for i, part in enumerate((lo, hi)):
        if all(isinstance(e, Sym) and e.name == "_" for e in part):
            continue  # nothing of this half is used
        dest = Vec(tuple(part)) if half == 2 else part[0]
        if half == 1 and isinstance(dest, Sym):
            continue
        a = Addr(addr.base, addr.offset + i * half * mem.bits // 8)
        out.append(Instruction(opcode, [dest, a, *ins.operands[2:]], ins.pred, ins.pred_neg, ins.line,
                               origin="split_ld"))
    return out


def split_ld(module: Module) -> Module:
    changed = False

    def rewrite(fn: Function) -> list[Statement] | None:
        nonlocal changed
        out: list[Statement] = []
        for s in fn.body or []:
            parts = _split(s) if isinstance(s, Instruction) else None
            if parts is None:
                out.append(s)
            else:
                out.extend(parts)
                changed = True
        return out

    result = rewrite_bodies(module, rewrite)
    if not changed:
        raise NotApplicable("no .v2/.v4 global loads to split (vec_ld's own vectors are left alone)")
    return result
