"""Printer: Module -> PTX text in one canonical layout (tabs, one statement per line)."""

from __future__ import annotations

from chronos.ptx.ir import (
    Addr,
    Comment,
    Directive,
    Function,
    Imm,
    Instruction,
    Label,
    Module,
    Neg,
    Operand,
    Param,
    Raw,
    Reg,
    RegDecl,
    ScopeClose,
    ScopeOpen,
    Statement,
    Sym,
    Vec,
)

# Indentation follows `{ }` nesting up to this depth and stays there: real kernels nest a level or two, and
# without a cap a file of N nested braces would print O(N^2) tabs (20,000 braces: 400 MB).
MAX_INDENT = 8
_INDENT = ["\t" * i for i in range(MAX_INDENT + 1)]


def _format_addr(op: Addr) -> str:
    base = format_operand(op.base)
    if op.offset == 0:
        return f"[{base}]"
    return f"[{base}+{op.offset}]"  # PTX spells a negative offset `+-8`


def _format_vec(op: Vec) -> str:
    return "{" + ", ".join([format_operand(e) for e in op.elems]) + "}"


_FORMAT = {  # by exact type, the common case; subclasses go through the isinstance chain below
    Reg: lambda op: op.name,
    Sym: lambda op: op.name,
    Imm: lambda op: op.text,
    Raw: lambda op: op.text,
    Neg: lambda op: "!" + op.inner.name,
    Addr: _format_addr,
    Vec: _format_vec,
}


def format_operand(op: Operand) -> str:
    fmt = _FORMAT.get(type(op))
    if fmt is not None:
        return fmt(op)
    if isinstance(op, (Reg, Sym)):
        return op.name
    if isinstance(op, (Imm, Raw)):
        return op.text
    if isinstance(op, Neg):
        return "!" + op.inner.name
    if isinstance(op, Vec):
        return _format_vec(op)
    if isinstance(op, Addr):
        return _format_addr(op)
    raise TypeError(f"not an operand: {op!r}")


def format_instruction(ins: Instruction) -> str:
    guard = ""
    if ins.pred is not None:
        guard = f"@{'!' if ins.pred_neg else ''}{ins.pred} "
    if not ins.operands:
        return f"{guard}{ins.opcode};"
    return f"{guard}{ins.opcode} \t{', '.join([format_operand(o) for o in ins.operands])};"


def _format_param(p: Param) -> str:
    parts = [p.space]
    if p.align is not None:
        parts.append(f".align {p.align}")
    parts.append(p.dtype)
    if p.is_ptr:
        parts.append(".ptr")
        if p.ptr_space:
            parts.append(p.ptr_space)
        if p.ptr_align is not None:
            parts.append(f".align {p.ptr_align}")
    parts.append(p.name + (p.array or ""))
    return " ".join(parts)


def _format_statement(s: Statement, ind: str) -> str:
    if isinstance(s, Instruction):
        return ind + format_instruction(s)
    if isinstance(s, Label):
        return f"{s.name}:"
    if isinstance(s, RegDecl):
        names = ", ".join(n if c is None else f"{n}<{c}>" for n, c in s.names)
        return f"{ind}.reg {s.dtype} \t{names};"
    if isinstance(s, Comment):
        return ind + s.text
    if isinstance(s, Directive):
        return ind + s.text
    raise TypeError(f"not a statement: {s!r}")


def _emit_function(fn: Function, out: list[str]) -> None:
    head = " ".join([*fn.linkage, fn.kind])
    if fn.ret_params:
        head += " (" + ", ".join(_format_param(p) for p in fn.ret_params) + ")"
    head += f" {fn.name}"
    if fn.params:
        out.append(head + "(")
        out.append(",\n".join("\t" + _format_param(p) for p in fn.params))
        out.append(")")
    else:
        out.append(head + "()")
    out.extend(fn.attrs)
    for name, value in fn.directives:
        out.append(f"{name} {value}".rstrip() + (";" if name == ".pragma" else ""))
    if fn.body is None:
        out.append(";")
        return
    out.append("{")
    depth, ind = 1, _INDENT[1]
    for s in fn.body:
        if type(s) is Instruction:  # the common case first
            out.append(ind + format_instruction(s))
        elif isinstance(s, ScopeOpen):
            out.append(ind + "{")
            depth += 1
            ind = _INDENT[min(depth, MAX_INDENT)]
        elif isinstance(s, ScopeClose):
            depth = max(1, depth - 1)
            ind = _INDENT[min(depth, MAX_INDENT)]
            out.append(ind + "}")
        else:
            out.append(_format_statement(s, ind))
    out.append("}")


def emit(module: Module) -> str:
    """Print a Module as PTX text that ptxas assembles to the same SASS as the text it was parsed from."""
    out: list[str] = [c.text for c in module.preamble]
    out.append(f".version {module.version}")
    out.append(".target " + ", ".join(module.target))
    if module.address_size is not None:
        out.append(f".address_size {module.address_size}")
    out.append("")
    for item in module.items:
        if isinstance(item, Function):
            _emit_function(item, out)
            out.append("")
        elif isinstance(item, (Comment, Directive)):
            out.append(item.text)
        else:
            raise TypeError(f"not a module item: {item!r}")
    return "\n".join(out) + "\n"
