"""Known-congruence analysis: for each register, the low address bits that are provably fixed.

A value is described by (k, r): value ≡ r (mod 2**k). It starts from the pointer parameters' alignment
(`.ptr .align N`, or the kernel's alignment contract) and the alignment of declared variables, and
propagates through mov/cvta/cvt/add/sub/mul/mad/shl/and/or. Any other definition makes a register unknown
(k = 0). The analysis is flow-insensitive (the meet over *every* definition of a register, iterated to a
fixed point; a register read before any definition was seen counts as unknown), which is sound for
non-SSA PTX and loops alike.
"""

from __future__ import annotations

import re

from chronos.ptx.ir import Addr, Directive, Function, Imm, Instruction, Module, Reg, Sym

MAX_BITS = 8  # 256-byte congruence is more than any vector access needs
_TOP = None  # "no definition seen yet" (optimistic start)
_DECL_ALIGN = re.compile(r"\.align\s+(\d+)[^;]*?\s([\w$]+)\s*(?:\[|;)")


def _norm(k: int, r: int) -> tuple[int, int]:
    k = max(0, min(k, MAX_BITS))
    return k, r % (1 << k) if k else 0


def _meet(a, b):
    if a is _TOP:
        return b
    if b is _TOP:
        return a
    k = min(a[0], b[0])
    while k and (a[1] - b[1]) % (1 << k):
        k -= 1
    return _norm(k, a[1])


def _tz(v) -> int:
    """Known trailing zero bits of a congruence."""
    k, r = v
    if r == 0:
        return k
    return (r & -r).bit_length() - 1


def _add(a, b, sign=1):
    k = min(a[0], b[0])
    return _norm(k, a[1] + sign * b[1])


def _mul(a, b):
    # x = ra + 2^ka*m, y = rb + 2^kb*n  =>  x*y ≡ ra*rb (mod 2^min(kb + tz(a), ka + tz(b)))
    return _norm(min(b[0] + _tz(a), a[0] + _tz(b)), a[1] * b[1])


def _imm(v: int) -> tuple[int, int]:
    return _norm(MAX_BITS, v)


def symbol_alignment(module: Module) -> dict[str, int]:
    """Declared alignment (bytes) of module- and function-scope variables:
    `.shared .align 16 .b8 smem[..]`."""
    out: dict[str, int] = {}
    texts = [i.text for i in module.items if isinstance(i, Directive)]
    for fn in module.functions():
        texts += [s.text for s in fn.body or [] if isinstance(s, Directive)]
    for t in texts:
        m = _DECL_ALIGN.search(t)
        if m:
            out[m.group(2)] = int(m.group(1))
    return out


def param_alignment(module: Module, fn: Function) -> dict[str, int]:
    """Alignment in bytes that each pointer parameter's value is known to have."""
    out = {}
    for p in fn.params:
        align = max(p.ptr_align or 1, module.align_contract.get(p.name, 1))
        if align > 1:
            out[p.name] = align
    return out


class Congruence:
    """The solved congruences of one function's registers."""

    def __init__(self, module: Module, fn: Function):
        self.params = param_alignment(module, fn)
        self.symbols = symbol_alignment(module)
        self.values: dict[str, tuple[int, int] | None] = {}
        defs = [i for i in fn.instructions() if i.operands and isinstance(i.operands[0], Reg)]
        for _ in range(50):  # converges in a few rounds; the bound guards against pathological inputs
            changed = False
            for ins in defs:
                name = ins.operands[0].name
                new = _meet(self.values.get(name, _TOP), self._transfer(ins))
                if new != self.values.get(name, _TOP):
                    self.values[name] = new
                    changed = True
            if not changed:
                break
        else:  # no fixed point: forget everything rather than trust a partial result
            self.values = {}

    def of(self, op) -> tuple[int, int]:
        if isinstance(op, Imm):
            v = op.value
            return _imm(v) if v is not None else (0, 0)
        if isinstance(op, Reg):
            v = self.values.get(op.name, _TOP)
            return (0, 0) if v is _TOP else v
        if isinstance(op, Sym):
            a = self.symbols.get(op.name, 1)
            return _norm(a.bit_length() - 1, 0)
        return (0, 0)

    def _transfer(self, ins: Instruction):
        op, ops = ins.op, ins.operands
        src = ops[1:]
        if op == "ld" and ins.has_mod("param") and src and isinstance(src[0], Addr) \
                and isinstance(src[0].base, Sym) and src[0].offset == 0:
            a = self.params.get(src[0].base.name, 1)
            return _norm(a.bit_length() - 1, 0)
        if op in ("mov", "cvta", "cvt") and len(src) == 1:
            if isinstance(src[0], Reg) and src[0].is_special:
                return (0, 0)
            if op == "cvt" and not all(m[0] in "usb" and m[1:].isdigit() for m in ins.mods):
                return (0, 0)  # float conversions and saturation do not keep the low bits
            return self.of(src[0])
        if op in ("add", "sub") and len(src) == 2 and not ins.has_mod("f32") and not ins.has_mod("f64"):
            return _add(self.of(src[0]), self.of(src[1]), -1 if op == "sub" else 1)
        if op == "mul" and len(src) == 2 and (ins.has_mod("lo") or ins.has_mod("wide")):
            return _mul(self.of(src[0]), self.of(src[1]))
        if op == "mad" and len(src) == 3 and (ins.has_mod("lo") or ins.has_mod("wide")):
            return _add(_mul(self.of(src[0]), self.of(src[1])), self.of(src[2]))
        if op == "shl" and len(src) == 2 and isinstance(src[1], Imm) and src[1].value is not None:
            s = src[1].value
            a = self.of(src[0])
            return _norm(a[0] + s, a[1] << s)
        if op == "and" and len(src) == 2:
            return self._and(self.of(src[0]), src[1])
        if op == "or" and len(src) == 2:
            a, b = self.of(src[0]), self.of(src[1])
            k = min(a[0], b[0])
            return _norm(k, a[1] | b[1])
        return (0, 0)

    def _and(self, a, mask_op):
        if not isinstance(mask_op, Imm) or mask_op.value is None:
            return _norm(max(_tz(a), _tz(self.of(mask_op))), 0)  # known-zero low bits of either side survive
        mask = mask_op.value
        t = (mask & -mask).bit_length() - 1 if mask else MAX_BITS
        k = max(a[0], min(t, MAX_BITS))
        return _norm(k, a[1] & mask)

    def aligned(self, addr: Addr, nbytes: int) -> bool:
        """True when `addr` is provably a multiple of `nbytes` (a power of two)."""
        need = nbytes.bit_length() - 1
        k, r = self.of(addr.base)
        return k >= need and (r + addr.offset) % nbytes == 0
