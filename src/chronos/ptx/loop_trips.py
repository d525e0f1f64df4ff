"""Loop structure read from PTX for observation v2 (chronos.features.v2): back edges, and a loop's trip count
where the PTX states it.

A loop is a backward branch: a `bra` to a label earlier in the body; its region is the statements from the
label to the branch. Its trip count is read when the branch's guard is one `setp.<cmp>` in the region
comparing an *induction register* with a *bound*:

* the induction register is updated in the region only by `add`/`sub` of immediates (their sum is the step
  per trip) and defined outside it exactly once, by a value the evaluator below can compute (its start);
* the bound is a value the evaluator can compute: an immediate, a `ld.param` of a scalar parameter whose
  value the launch gives (KernelSpec's scalar arguments), or integer arithmetic (mov, add, sub, mul.lo, shl,
  shr, and, or, xor, neg, min, max) over those, each register defined once in the function.

The trip count is then the smallest k >= 1 at which the guard says leave, for the value the `setp` sees on
the k-th trip (start + k * step, less the increments that come after the `setp`). Anything else — a compare
against a loaded value, an induction updated by a register, a step of the wrong sign for the compare, a
guard combined from several predicates — is unknown (None), never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from chronos.ptx.analysis import defs_uses
from chronos.ptx.ir import Addr, Function, Imm, Instruction, Label, Reg, Sym

_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NOT = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}
_MAX_DEPTH = 24


@dataclass(frozen=True)
class BackEdge:
    """A loop: body[head] is its label, body[branch] the backward branch."""

    head: int
    branch: int


def back_edges(fn: Function) -> list[BackEdge]:
    """Every backward branch of the body, in layout order."""
    position: dict[str, int] = {}
    out = []
    for i, s in enumerate(fn.body or []):
        if isinstance(s, Label):
            position[s.name] = i
        elif isinstance(s, Instruction) and s.op == "bra":
            target = next((o.name for o in s.operands if isinstance(o, Sym)), None)
            if target in position:
                out.append(BackEdge(position[target], i))
    return out


def _bits(ins: Instruction) -> int:
    return 64 if any(m.endswith("64") for m in ins.mods) else 32


def _wrap(value: int, bits: int) -> int:
    """Two's-complement wrap to a signed `bits`-bit value."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class _Evaluator:
    """Integer values of registers defined once in the function, from immediates and launch scalars."""

    def __init__(self, fn: Function, scalars: Mapping[str, int]):
        self.scalars = scalars
        self.defs: dict[str, list[int]] = {}
        self.body = fn.body or []
        for i, s in enumerate(self.body):
            if isinstance(s, Instruction):
                for d in defs_uses(s)[0]:
                    self.defs.setdefault(d, []).append(i)

    def operand(self, o, depth: int) -> int | None:
        if isinstance(o, Imm):
            v = o.value
            return v if isinstance(v, int) else None
        if isinstance(o, Reg):
            sites = self.defs.get(o.name, [])
            return self.at(sites[0], depth + 1) if len(sites) == 1 else None
        return None

    def at(self, i: int, depth: int = 0) -> int | None:
        """The value instruction body[i] writes, or None when it is not computable."""
        ins = self.body[i]
        if depth > _MAX_DEPTH or not isinstance(ins, Instruction) or ins.pred or len(ins.operands) < 2:
            return None
        op, srcs = ins.op, ins.operands[1:]
        if op == "ld" and "param" in ins.mods and isinstance(srcs[0], Addr) and isinstance(srcs[0].base, Sym):
            v = self.scalars.get(srcs[0].base.name)
            return int(v) if isinstance(v, int | float) and float(v).is_integer() else None
        vals = [self.operand(o, depth) for o in srcs]
        if any(v is None for v in vals):
            return None
        return _apply(ins, vals)


def _apply(ins: Instruction, vals: list[int]) -> int | None:
    bits, op = _bits(ins), ins.op
    mask = (1 << bits) - 1
    if op in ("mov", "cvt") and len(vals) == 1:
        return _wrap(vals[0], bits)
    if op == "neg" and len(vals) == 1:
        return _wrap(-vals[0], bits)
    if len(vals) != 2:
        return None
    a, b = vals
    if op == "shr":
        return _wrap(a >> b if "s32" in ins.mods or "s64" in ins.mods else (a & mask) >> b, bits)
    table = {"add": lambda: a + b, "sub": lambda: a - b, "shl": lambda: a << b, "and": lambda: a & b,
             "or": lambda: a | b, "xor": lambda: a ^ b, "min": lambda: min(a, b), "max": lambda: max(a, b)}
    if op == "mul" and "lo" in ins.mods:
        return _wrap(a * b, bits)
    return _wrap(table[op](), bits) if op in table else None


def _induction(body, loop: BackEdge, reg: str, ev: _Evaluator) -> tuple[int, int, list[int]] | None:
    """(start, step per trip, increment positions) of `reg` as an induction register of `loop`, or None."""
    incs: list[tuple[int, int]] = []
    for i in range(loop.head, loop.branch):
        s = body[i]
        if not isinstance(s, Instruction) or reg not in defs_uses(s)[0]:
            continue
        ops = s.operands
        if s.op not in ("add", "sub") or s.pred or len(ops) != 3 or ops[1] != Reg(reg) \
                or not isinstance(ops[2], Imm) or not isinstance(ops[2].value, int):
            return None
        incs.append((i, ops[2].value * (-1 if s.op == "sub" else 1)))
    outside = [i for i in ev.defs.get(reg, []) if not loop.head <= i <= loop.branch]
    if not incs or len(outside) != 1:
        return None
    start = ev.at(outside[0])
    return None if start is None else (start, sum(v for _, v in incs), [i for i, _ in incs])


def _first_exit(cmp: str, start: int, step: int, bound: int) -> int | None:
    """Smallest k >= 1 with not cmp(start + k * step, bound), or None when there is none or it is unknown."""
    d = bound - start
    if cmp == "eq":
        return 1 if start + step != bound else 2
    if step == 0:
        return None
    if cmp == "ne":
        return d // step if d % step == 0 and d // step >= 1 else None
    if cmp in ("lt", "le") and step > 0:
        k = math.ceil(d / step) if cmp == "lt" else d // step + 1
    elif cmp in ("gt", "ge") and step < 0:
        k = math.ceil(-d / -step) if cmp == "gt" else -d // -step + 1
    else:
        return None
    return max(1, k)


def _guard(body, loop: BackEdge) -> tuple[int, Instruction] | None:
    """The last setp in the region that writes the back-branch's guard predicate."""
    br = body[loop.branch]
    if br.pred is None:
        return None
    for i in range(loop.branch - 1, loop.head, -1):
        s = body[i]
        if isinstance(s, Instruction) and br.pred in defs_uses(s)[0]:
            return (i, s) if s.op == "setp" and not s.pred and len(s.operands) == 3 else None
    return None


def trip_count(fn: Function, loop: BackEdge, scalars: Mapping[str, int] | None = None,
               ev: _Evaluator | None = None) -> int | None:
    """The number of times the loop's region runs per entry into it, or None (see the module docstring).
    `scalars`: parameter name -> value of the launch's scalar arguments."""
    body = fn.body or []
    ev = ev or _Evaluator(fn, scalars or {})
    found = _guard(body, loop)
    if found is None:
        return None
    at, setp = found
    cmp = next((_UNSIGNED.get(m, m) for m in setp.mods if _UNSIGNED.get(m, m) in _SWAP), None)
    a, b = setp.operands[1:]
    if cmp is None:
        return None
    for ind, other, c in ((a, b, cmp), (b, a, _SWAP[cmp])):
        if not isinstance(ind, Reg):
            continue
        found_ind = _induction(body, loop, ind.name, ev)
        bound = ev.operand(other, 0)
        if found_ind is None or bound is None:
            continue
        start, step, incs = found_ind
        after = sum(_step_at(body, i) for i in incs if i > at)
        c = _NOT[c] if body[loop.branch].pred_neg else c
        return _first_exit(c, start - after, step, bound)
    return None


def _step_at(body, i: int) -> int:
    s = body[i]
    return s.operands[2].value * (-1 if s.op == "sub" else 1)


def launch_scalars(fn: Function, launch) -> dict[str, int]:
    """Parameter name -> value of the launch's scalar arguments (KernelSpec args are in parameter order)."""
    if launch is None:
        return {}
    return {p.name: a.value for p, a in zip(fn.params, launch.args, strict=False)
            if a.kind == "scalar" and a.value is not None}


def trip_counts(fn: Function, launch=None) -> list[int | None]:
    """Per back edge of `fn` (layout order), its trip count or None."""
    ev = _Evaluator(fn, launch_scalars(fn, launch))
    return [trip_count(fn, loop, ev=ev) for loop in back_edges(fn)]
