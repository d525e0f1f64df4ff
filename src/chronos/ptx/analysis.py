"""Analyses over the IR: basic blocks and CFG, register def/use, memory-op classes, ordering points.

These are what the transforms build their legality proofs on, so every rule errs towards "ordered" and
"may alias": an instruction this module does not recognise is treated as an ordering point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from chronos.ptx.ir import (
    Addr,
    Comment,
    Function,
    Imm,
    Instruction,
    Label,
    Reg,
    ScopeClose,
    ScopeOpen,
    Statement,
    Sym,
    operand_regs,
)

# ------------------------------------------------------------------ instruction classes
# Opcodes whose first operand is not a register destination.
_NO_DEF_OPS = {"st", "red", "prefetch", "prefetchu", "bar", "barrier", "membar", "fence", "bra", "brx", "ret",
               "exit", "trap", "brkpt", "nanosleep", "pmevent", "stmatrix", "cp", "wgmma", "griddepcontrol",
               "setmaxnreg", "discard", "applypriority", "sust", "sured", "tensormap", "multimem", "st.async"}
_BRANCH_OPS = {"bra", "brx"}
_TERMINATOR_OPS = {"ret", "exit", "trap"}
_MEMORY_OPS = {"ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu", "cp", "ldmatrix", "stmatrix", "tex",
               "tld4", "suld", "sust", "sured", "multimem", "cvta"}
_STATE_SPACES = ("global", "shared", "local", "param", "const")
# Opcodes that order memory or threads: nothing may be moved across them.
_ORDERING_OPS = {"bar", "barrier", "membar", "fence", "mbarrier", "wgmma", "elect", "shfl", "vote", "match",
                 "redux", "activemask", "call", "ret", "exit", "bra", "brx", "trap", "brkpt", "atom", "red",
                 "setmaxnreg", "griddepcontrol", "nanosleep", "tcgen05", "cluster", "multimem", "getctarank",
                 "mapa", "pmevent", "stmatrix", "ldmatrix", "tensormap", "st.async", "red.async", "cp.async",
                 "cp.reduce.async", "clusterlaunchcontrol"}


_TIMERS = {"%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}


def _op_key(ins: Instruction) -> str:
    """The opcode family used for classification: 'cp.async', 'st.async', or the base op."""
    op = ins.opcode.partition(".")[0]
    if op in ("cp", "st", "red"):
        for two in ("cp.async", "st.async", "red.async", "cp.reduce.async"):
            if ins.opcode.startswith(two):
                return two
    return op


class _OpInfo(NamedTuple):
    """What the opcode string alone decides; computed once per distinct opcode."""

    op: str
    key: str
    writes_first: bool  # operand 0 is a register destination (unless it is an address)
    orders: bool  # an ordering point by opcode
    mem: tuple | None  # (kind, space, vector, bits, strong) for memory instructions


_OPINFO: dict[str, _OpInfo] = {}


def _info(opcode: str) -> _OpInfo:
    info = _OPINFO.get(opcode)
    if info is None:
        probe = Instruction(opcode)
        key = _op_key(probe)
        op = probe.op
        info = _OPINFO[opcode] = _OpInfo(op, key, op not in _NO_DEF_OPS and key not in _NO_DEF_OPS,
                                         op in _ORDERING_OPS or key in _ORDERING_OPS, _memory_class(probe))
    return info


def _memo(ins: Instruction, slot: str, compute):
    """Per-instruction memo, stored on the instruction and keyed on what the analyses read: transforms
    build new instructions (or new operand lists) rather than editing old ones, so the key stays valid."""
    sig = (ins.opcode, ins.pred, id(ins.operands))
    hit = ins.__dict__.get(slot)
    if hit is not None and hit[0] == sig:
        return hit[1]
    value = compute(ins)
    ins.__dict__[slot] = (sig, value)
    return value


def defs_uses(ins: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Registers an instruction writes and reads (vector elements, address bases and the guard included).

    A predicated write is also counted as a read of the old value: if the guard is false the register keeps
    it. wgmma/mma accumulators are both written and read. Memoised on the instruction's content.
    """
    return _memo(ins, "_defs_uses", _defs_uses)


def _defs_uses(ins: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    ops = ins.operands
    info = _info(ins.opcode)
    op = info.op
    if op == "call":
        # call{.uni} (ret), func, (args): the first parenthesised list, if two lists are given, is written.
        raws = [o for o in ops if not isinstance(o, Sym)]
        written = operand_regs(raws[0]) if len(raws) >= 2 else []
        read = [r for o in raws[1 if len(raws) >= 2 else 0:] for r in operand_regs(o)]
        return _dedupe(written), _dedupe(read + ([ins.pred] if ins.pred else []))
    defs: list[str] = []
    uses: list[str] = []
    if ops and info.writes_first and type(ops[0]) is not Addr:
        # `%p|%q` (setp, shfl, elect) is kept as Raw text; every register in it is a destination.
        first = ops[0]
        defs = [first.name] if type(first) is Reg else operand_regs(first)
        if op == "mma" or ins.pred is not None:
            uses.extend(defs)
        rest = ops[1:]
    else:
        rest = ops
    for o in rest:
        if type(o) is Reg:
            uses.append(o.name)
        elif type(o) is not Imm:
            uses.extend(operand_regs(o))
    if op == "wgmma" and ops and ins.opcode.startswith("wgmma.mma_async"):
        # the accumulator vector is operand 0 and is read when scale-d is set: count it as used
        defs.extend(operand_regs(ops[0]))
        uses.extend(operand_regs(ops[0]))
    if ins.pred is not None:
        uses.append(ins.pred)
    return _dedupe(defs), _dedupe(uses)


def _dedupe(xs: list[str]) -> tuple[str, ...]:
    if len(xs) == 1:  # the common cases first: this runs for every instruction of every transform
        return () if xs[0] == "_" else (xs[0],)
    if not xs:
        return ()
    return tuple(dict.fromkeys(x for x in xs if x != "_"))


# ------------------------------------------------------------------ memory operations
@dataclass(frozen=True)
class MemOp:
    """What a memory instruction does: kind, state space, access width and where."""

    kind: str  # load | store | atomic | reduction | async_copy | prefetch | matrix
    space: str  # global | shared | local | param | const | generic
    vector: int  # 1, 2, 4 or 8 elements
    bits: int  # element width in bits (0 when not given, e.g. prefetch)
    addr: Addr | None
    volatile: bool  # .volatile / .relaxed / .acquire / .release / .mmio or a scope: strong ordering semantics

    @property
    def bytes(self) -> int:
        return self.vector * self.bits // 8


_TYPE_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
              "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "b64": 64, "u64": 64,
              "s64": 64, "f64": 64, "b128": 128}
_STRONG = {"volatile", "relaxed", "acquire", "release", "mmio", "cta", "gpu", "sys", "cluster"}


def memory_op(ins: Instruction) -> MemOp | None:
    """Classify a memory instruction, or None if the instruction does not access memory. Memoised."""
    if _info(ins.opcode).mem is None:
        return None  # the common case, decided by the opcode alone
    return _memo(ins, "_memory_op", _memory_op)


def _memory_op(ins: Instruction) -> MemOp | None:
    kind, space, vector, bits, strong = _info(ins.opcode).mem
    addr = None
    for o in ins.operands:
        if type(o) is Addr:
            addr = o
            break
    return MemOp(kind, space, vector, bits, addr, strong)


def _memory_class(ins: Instruction) -> tuple | None:
    """(kind, space, vector, bits, strong) from the opcode, or None when it is not a memory access."""
    key = _op_key(ins)
    if key not in _MEMORY_OPS and ins.op not in _MEMORY_OPS:
        return None
    if ins.op == "cvta":
        return None  # address conversion, no access
    mods = ins.mods
    kind = {"ld": "load", "ldu": "load", "st": "store", "atom": "atomic", "red": "reduction",
            "prefetch": "prefetch", "prefetchu": "prefetch", "ldmatrix": "matrix", "stmatrix": "matrix",
            "tex": "load", "tld4": "load", "suld": "load", "sust": "store", "sured": "reduction",
            "multimem": "atomic"}.get(ins.op, "async_copy")
    if key in ("cp.async", "cp.reduce.async", "st.async", "red.async"):
        kind = "async_copy"
    space = "generic"
    for m in mods:
        base = m.split("::", 1)[0]
        if base in _STATE_SPACES:
            space = base
            break
    if ins.op == "ld" and "nc" in mods:
        space = "global"
    vector = 1
    bits = 0
    for m in mods:
        if m in ("v2", "v4", "v8"):
            vector = int(m[1])
        elif m in _TYPE_BITS:
            bits = _TYPE_BITS[m]
    return kind, space, vector, bits, any(m in _STRONG for m in mods)


# ------------------------------------------------------------------ ordering points
def is_ordering_point(s: Statement) -> bool:
    """True for statements nothing may be moved across: barriers, fences, async/tensor-core sync, warp-sync
    collectives, control flow, atomics, strong (volatile/relaxed/acquire/...) accesses, timer reads,
    inline-asm and scope boundaries and labels."""
    if isinstance(s, (Label, ScopeOpen, ScopeClose)):
        return True
    if isinstance(s, Comment):
        return s.inline_asm is not None
    if not isinstance(s, Instruction):
        return False  # .reg / .loc / local declarations do not execute
    return _instruction_orders(s)


def _instruction_orders(s: Instruction) -> bool:
    info = _info(s.opcode)
    if info.orders:
        return True
    for o in s.operands:
        if type(o) is Reg and o.name in _TIMERS:
            return True  # moving a clock read would change what it measures
    return info.mem is not None and info.mem[4]


# ------------------------------------------------------------------ basic blocks and CFG
@dataclass
class BasicBlock:
    index: int
    start: int  # index into Function.body of the first statement
    end: int  # one past the last statement
    label: str | None = None
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)

    def statements(self, fn: Function) -> list[Statement]:
        return (fn.body or [])[self.start:self.end]


def basic_blocks(fn: Function) -> list[BasicBlock]:
    """Split a body at labels and after branches/returns; link successors (fall-through and branch targets).

    An indirect branch (brx.idx) or a call's return is modelled conservatively: brx targets every label.
    """
    body = fn.body or []
    blocks = _split_blocks(body)
    by_label = _label_blocks(body, blocks)
    for b in blocks:
        _link_successors(body, b, len(blocks), by_label)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.index)
    return blocks


def _split_blocks(body: list[Statement]) -> list[BasicBlock]:
    blocks: list[BasicBlock] = []
    start = 0
    for i, s in enumerate(body):
        if isinstance(s, Label) and i > start:
            blocks.append(BasicBlock(len(blocks), start, i))
            start = i
        if isinstance(s, Instruction) and (s.op in _BRANCH_OPS or s.op in _TERMINATOR_OPS):
            blocks.append(BasicBlock(len(blocks), start, i + 1))
            start = i + 1
    if start < len(body) or not blocks:
        blocks.append(BasicBlock(len(blocks), start, len(body)))
    return blocks


def _label_blocks(body: list[Statement], blocks: list[BasicBlock]) -> dict[str, int]:
    """Name each block after its leading label(s); return {label: block index}."""
    by_label: dict[str, int] = {}
    for b in blocks:
        for s in body[b.start:b.end]:
            if isinstance(s, Label):
                by_label.setdefault(s.name, b.index)
                b.label = b.label or s.name
            elif not isinstance(s, Comment):
                break
    return by_label


def _link_successors(body: list[Statement], b: BasicBlock, n_blocks: int, by_label: dict[str, int]) -> None:
    last = next((s for s in reversed(body[b.start:b.end]) if isinstance(s, Instruction)), None)
    falls = True
    if last is not None and last.op in _BRANCH_OPS:
        if last.op == "brx":
            b.succs.extend(by_label.values())
        else:
            tgt = next((o.name for o in last.operands if isinstance(o, Sym)), None)
            if tgt in by_label:
                b.succs.append(by_label[tgt])
        falls = last.pred is not None  # a guarded branch may fall through
    elif last is not None and last.op in _TERMINATOR_OPS:
        falls = last.pred is not None
    if falls and b.index + 1 < n_blocks:
        b.succs.append(b.index + 1)
    b.succs = list(dict.fromkeys(b.succs))
