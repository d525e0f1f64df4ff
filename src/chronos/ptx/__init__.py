"""PTX IR: `parse(text) -> Module`, `emit(module) -> str`, and analyses over the IR."""

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
from chronos.ptx.parser import parse
from chronos.ptx.printer import emit, format_instruction, format_operand

__all__ = [
    "Addr", "Comment", "Directive", "Function", "Imm", "Instruction", "Label", "Module", "Neg", "Operand",
    "Param", "Raw", "Reg", "RegDecl", "ScopeClose", "ScopeOpen", "Statement", "Sym", "Vec",
    "emit", "format_instruction", "format_operand", "parse",
]
