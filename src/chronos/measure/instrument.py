"""%clock64 cycle instrumentation of a kernel, on the PTX IR.

`instrument(module, entry)` returns a new Module whose entry takes one extra trailing `.param .u64`
(a pointer to this launch's slice of a u64 buffer, one slot per thread). The entry:

* computes its linear thread id over 3-D grids and blocks,
  `((ctaid.z*nctaid.y + ctaid.y)*nctaid.x + ctaid.x) * (ntid.x*ntid.y*ntid.z)
   + (tid.z*ntid.y + tid.y)*ntid.x + tid.x`, and its slot address, then reads `%clock64` (start);
* before every `ret`/`exit` (under the same guard, `@%p`/`@!%p`), reads `%clock64` again and stores the
  delta to its slot; a body that can fall off its end gets the same epilogue and a `ret`.

Registers are declared with a prefix that no name in the function uses, so they cannot collide. The
instrumented kernel is used only for cycles; verification and timing run the uninstrumented cubin.
"""

from __future__ import annotations

import copy
import re

from chronos.errors import InstrumentError
from chronos.ptx import emit, parse
from chronos.ptx.ir import (
    Addr,
    Comment,
    Function,
    Instruction,
    Label,
    Module,
    Param,
    Reg,
    RegDecl,
    ScopeClose,
    ScopeOpen,
)

CYCLES_PARAM_SUFFIX = "chronos_cycles"


def _fresh_prefix(fn: Function, module_text: str) -> str:
    base = "chr"
    n = 0
    while re.search(rf"%?{base}{n}_", module_text):
        n += 1
    return f"{base}{n}_"


def _I(opcode: str, *ops, pred: str | None = None, neg: bool = False) -> Instruction:
    return Instruction(opcode, list(ops), pred=pred, pred_neg=neg, origin="instrument")


def _prologue(p: str, param: str) -> list:
    r = [Reg(f"%{p}r{i}") for i in range(12)]
    rd = [Reg(f"%{p}rd{i}") for i in range(6)]
    s = Reg
    return [
        Comment("// chronos: %clock64 instrumentation prologue"),
        _I("ld.param.u64", rd[0], Addr(_sym(param))),
        _I("cvta.to.global.u64", rd[0], rd[0]),
        _I("mov.u32", r[0], s("%ctaid.x")), _I("mov.u32", r[1], s("%ctaid.y")),
        _I("mov.u32", r[2], s("%ctaid.z")),
        _I("mov.u32", r[3], s("%nctaid.x")), _I("mov.u32", r[4], s("%nctaid.y")),
        _I("mov.u32", r[5], s("%tid.x")), _I("mov.u32", r[6], s("%tid.y")), _I("mov.u32", r[7], s("%tid.z")),
        _I("mov.u32", r[8], s("%ntid.x")), _I("mov.u32", r[9], s("%ntid.y")),
        _I("mov.u32", r[10], s("%ntid.z")),
        # block id (64-bit: grids can exceed 2^32 threads in total)
        _I("mad.lo.u32", r[2], r[2], r[4], r[1]),            # ctaid.z*nctaid.y + ctaid.y
        _I("mul.wide.u32", rd[1], r[2], r[3]),               # (...)*nctaid.x
        _I("cvt.u64.u32", rd[2], r[0]),
        _I("add.u64", rd[1], rd[1], rd[2]),                  # linear block id
        _I("mul.lo.u32", r[11], r[8], r[9]),
        _I("mul.lo.u32", r[11], r[11], r[10]),               # threads per block
        _I("cvt.u64.u32", rd[2], r[11]),
        _I("mul.lo.u64", rd[1], rd[1], rd[2]),
        _I("mad.lo.u32", r[7], r[7], r[9], r[6]),            # tid.z*ntid.y + tid.y
        _I("mad.lo.u32", r[7], r[7], r[8], r[5]),            # (...)*ntid.x + tid.x
        _I("cvt.u64.u32", rd[2], r[7]),
        _I("add.u64", rd[1], rd[1], rd[2]),                  # linear thread id
        _I("shl.b64", rd[1], rd[1], _imm(3)),
        _I("add.u64", rd[0], rd[0], rd[1]),                  # slot address
        _I("mov.u64", rd[3], s("%clock64")),                 # start
    ]


def _epilogue(p: str, pred: str | None, neg: bool) -> list:
    rd = [Reg(f"%{p}rd{i}") for i in range(6)]
    return [
        _I("mov.u64", rd[4], Reg("%clock64"), pred=pred, neg=neg),
        _I("sub.s64", rd[5], rd[4], rd[3], pred=pred, neg=neg),
        _I("st.global.u64", Addr(rd[0]), rd[5], pred=pred, neg=neg),
    ]


def _sym(name: str):
    from chronos.ptx.ir import Sym

    return Sym(name)


def _imm(v: int):
    from chronos.ptx.ir import Imm

    return Imm(str(v))


def _is_exit(s) -> bool:
    return isinstance(s, Instruction) and s.op in ("ret", "exit")


def instrument(module: Module, entry: str | None = None) -> Module:
    """A copy of `module` whose entry records per-thread %clock64 deltas (see the module docstring)."""
    text = emit(module)
    mod = copy.deepcopy(module)
    try:
        fn = mod.entry(entry)
    except LookupError as e:
        raise InstrumentError(f"cannot instrument: {e}") from e
    p = _fresh_prefix(fn, text)
    param = f"{fn.name}_{p}{CYCLES_PARAM_SUFFIX}"
    fn.params = [*fn.params, Param(".u64", param)]
    body = list(fn.body or [])
    # Declarations stay first; the prologue goes before the first instruction/label of the body.
    first = next((i for i, s in enumerate(body)
                  if isinstance(s, (Instruction, Label, ScopeOpen, ScopeClose))), len(body))
    decls = [RegDecl(".b32", [(f"%{p}r", 12)]), RegDecl(".b64", [(f"%{p}rd", 6)])]
    new = body[:first] + decls + _prologue(p, param)
    for s in body[first:]:
        if _is_exit(s):
            new.extend(_epilogue(p, s.pred, s.pred_neg))
        new.append(s)
    last = next((s for s in reversed(new) if isinstance(s, (Instruction, Label))), None)
    falls_off = not (isinstance(last, Instruction) and last.pred is None
                     and (last.op in ("ret", "exit", "trap") or last.op == "bra"))
    if falls_off:
        new.extend(_epilogue(p, None, False))
        new.append(_I("ret"))
    fn.body = new
    return mod


def instrument_text(ptx: str, entry: str | None = None) -> str:
    """Parse, instrument, emit."""
    return emit(instrument(parse(ptx), entry))


__all__ = ["InstrumentError", "instrument", "instrument_text"]
