"""The PTX intermediate representation.

A Module is a header plus a list of top-level items; a Function holds its parameters, performance
directives and a flat list of body statements (nested `{ }` scopes are ScopeOpen/ScopeClose markers, so
that transforms can treat the body as one sequence). Anything the IR does not model (variable
declarations with initialisers, debug sections) is kept as verbatim source text, which is enough for
`emit(parse(x))` to assemble to the same SASS as `x`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_REG_RE = re.compile(r"%[A-Za-z_$][\w$]*(?:\.[xyzw])?")


# ---------------------------------------------------------------- operands
@dataclass(frozen=True)
class Reg:
    """A register or special register: `%r1`, `%rd2`, `%p3`, `%tid.x`, `%clock64`."""

    name: str

    @property
    def is_special(self) -> bool:
        return "." in self.name or self.name in SPECIAL_REGS


@dataclass(frozen=True)
class Imm:
    """An integer or float literal, kept as written: `0`, `-1`, `0x10`, `0f3F800000`, `0d3FF0...`."""

    text: str

    @property
    def value(self) -> int | None:
        """Integer value, or None for float literals."""
        t = self.text.rstrip("Uu")
        if t[:2] in ("0f", "0F", "0d", "0D"):
            return None
        try:
            return int(t, 0)
        except ValueError:
            return None


@dataclass(frozen=True)
class Sym:
    """A name: a label, a variable, a parameter or a function."""

    name: str


@dataclass(frozen=True)
class Neg:
    """A negated predicate operand, `!%p1`."""

    inner: Reg


@dataclass(frozen=True)
class Vec:
    """A vector operand `{%r1, %r2, _, %r4}` (`_` is the sink, a Sym named `_`)."""

    elems: tuple[Operand, ...]


@dataclass(frozen=True)
class Addr:
    """An address operand `[base+offset]`. `base` is a register, a symbol or an absolute immediate."""

    base: Reg | Sym | Imm
    offset: int = 0


@dataclass(frozen=True)
class Raw:
    """Operand text the IR does not model further (call argument lists, `%p1|%p2`, texture tuples)."""

    text: str


Operand = Reg | Imm | Sym | Neg | Vec | Addr | Raw

SPECIAL_REGS = frozenset(
    {"%clock", "%clock64", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
     "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%lanemask_eq", "%lanemask_le",
     "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%dynamic_smem_size", "%total_smem_size",
     "%is_explicit_cluster", "%cluster_ctarank", "%cluster_nctarank"}
)


def operand_regs(op: Operand) -> list[str]:
    """Register names an operand mentions (vector elements, address bases and raw text included)."""
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Neg):
        return [op.inner.name]
    if isinstance(op, Vec):
        return [r for e in op.elems for r in operand_regs(e)]
    if isinstance(op, Addr):
        return [op.base.name] if isinstance(op.base, Reg) else []
    if isinstance(op, Raw):
        return _REG_RE.findall(op.text)
    return []


# ---------------------------------------------------------------- statements
@dataclass
class Instruction:
    """`@%p1 ld.global.v4.b32 {...}, [%rd1+16];` — opcode is the full dotted name."""

    opcode: str
    operands: list[Operand] = field(default_factory=list)
    pred: str | None = None
    pred_neg: bool = False
    line: int = field(default=0, compare=False)  # source line; 0 for synthesised instructions
    origin: str = field(default="", compare=False)  # the transform that created it ("vec_ld", ...), if any

    @property
    def op(self) -> str:
        """The base opcode: `ld` for `ld.global.v4.b32`."""
        return self.opcode.partition(".")[0]

    @property
    def mods(self) -> tuple[str, ...]:
        """The dotted modifiers without leading dots: ('global', 'v4', 'b32')."""
        parts = self.opcode.split(".")
        return tuple(parts[1:])

    def has_mod(self, mod: str) -> bool:
        return mod in self.mods

    def with_opcode(self, opcode: str) -> Instruction:
        return Instruction(opcode, list(self.operands), self.pred, self.pred_neg, self.line, self.origin)


@dataclass
class RegDecl:
    """`.reg .b32 %r<33>;` or `.reg .pred %p1, %p2;` — names are (name, count or None)."""

    dtype: str
    names: list[tuple[str, int | None]]


@dataclass
class Label:
    name: str


@dataclass
class Comment:
    """A full-line comment (`// begin inline asm` markers included) or a block comment."""

    text: str

    @property
    def inline_asm(self) -> str | None:
        """'begin' or 'end' when this is an inline-asm marker, else None."""
        t = self.text.strip().lstrip("/").strip()
        if t == "begin inline asm":
            return "begin"
        if t == "end inline asm":
            return "end"
        return None


@dataclass
class Directive:
    """A directive kept verbatim: `.loc 1 20 0`, `.shared .align 16 .b8 smem[64];`, `.pragma "nounroll";`.

    `keyword` is the leading directive (`.loc`, `.shared`, ...); `text` is the exact source text.
    """

    keyword: str
    text: str


@dataclass
class ScopeOpen:
    pass


@dataclass
class ScopeClose:
    pass


Statement = Instruction | RegDecl | Label | Comment | Directive | ScopeOpen | ScopeClose


# ---------------------------------------------------------------- functions and module
@dataclass
class Param:
    """A kernel or function parameter: `.param .u64 .ptr .global .align 16 name`, `.param .b8 x[16]`."""

    dtype: str
    name: str
    ptr_space: str | None = None  # ".global", ".shared", ... when `.ptr` is given
    ptr_align: int | None = None  # the N of `.ptr ... .align N`
    align: int | None = None  # `.param .align N .b8 name[...]`
    array: str | None = None  # "[16]" kept as written
    space: str = ".param"
    is_ptr: bool = False


@dataclass
class Function:
    kind: str  # ".entry" or ".func"
    name: str
    linkage: list[str] = field(default_factory=list)  # [".visible"], [".weak"], [".extern"]
    params: list[Param] = field(default_factory=list)
    ret_params: list[Param] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)  # e.g. [".noreturn"]
    directives: list[tuple[str, str]] = field(default_factory=list)  # (".maxnreg", "128")
    body: list[Statement] | None = None  # None for a prototype

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"

    def directive(self, name: str) -> str | None:
        for k, v in self.directives:
            if k == name:
                return v
        return None

    def set_directive(self, name: str, value: str | None) -> None:
        """Replace (or with value None remove) a performance directive, keeping the others' order."""
        kept = [(k, v) for k, v in self.directives if k != name]
        if value is not None:
            kept.append((name, value))
        self.directives = kept

    @property
    def maxnreg(self) -> int | None:
        v = self.directive(".maxnreg")
        return int(v) if v is not None else None

    def instructions(self) -> list[Instruction]:
        return [s for s in (self.body or []) if isinstance(s, Instruction)]


TopItem = Function | Directive | Comment


@dataclass
class Module:
    version: str
    target: list[str]  # ["sm_90a"] or ["sm_89", "debug"]
    address_size: int | None = None
    preamble: list[Comment] = field(default_factory=list)  # comments before .version
    items: list[TopItem] = field(default_factory=list)
    source: str | None = None  # file name when known, for error messages
    # Not printed: the actions applied so far (for conflict checks) and the kernel's alignment contract,
    # {param name: bytes}, which adds to the `.ptr .align N` declarations (e.g. Triton's divisibility by 16).
    applied: tuple[str, ...] = ()
    align_contract: dict[str, int] = field(default_factory=dict)

    @property
    def arch(self) -> str:
        """The SM architecture the module targets: 'sm_90a', 'sm_89'."""
        for t in self.target:
            if t.startswith("sm_"):
                return t
        return self.target[0] if self.target else "sm_90"

    def functions(self) -> list[Function]:
        return [i for i in self.items if isinstance(i, Function)]

    def entries(self) -> list[Function]:
        return [f for f in self.functions() if f.is_entry and f.body is not None]

    def entry(self, name: str | None = None) -> Function:
        """The named entry, or the only/first entry with a body."""
        es = self.entries()
        if name is None:
            if not es:
                raise LookupError("module has no .entry with a body")
            return es[0]
        for e in es:
            if e.name == name:
                return e
        raise LookupError(f"no .entry named {name!r}")
