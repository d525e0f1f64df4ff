"""Fast path for function bodies: whole statements recognised by one compiled regex, straight from the text.

Almost every line of a real kernel is a plain instruction, a label, a `.reg` or `.loc` line, a comment or a
brace. Tokenising those and walking the tokens in Python cost ~30 us a line; one regex match per statement
costs a few. The patterns accept only statements whose tokens (lexer.WORD/NUM) and meaning are unambiguous
and build exactly the IR that the token parser (`statements.py`) builds for them; anything else (a string, a
block comment, a `Raw` operand, a statement spanning lines, any error) stops the fast path and the token
parser takes that statement, so errors and their positions come from one place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chronos.ptx.ir import (
    Addr,
    Comment,
    Directive,
    Imm,
    Instruction,
    Label,
    Neg,
    Operand,
    Raw,
    Reg,
    RegDecl,
    ScopeClose,
    ScopeOpen,
    Statement,
    Sym,
    Vec,
)
from chronos.ptx.lexer import NUM, WORD, WS

if TYPE_CHECKING:
    from chronos.ptx.cursor import TokenCursor

_S = WS + "*+"
_WS_CHARS = " \t\r\f\v"
# lexer.WORD's first characters
_NAME_START = frozenset("%_$.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NAME = r"[A-Za-z_$%][\w$.]*+(?:::[\w$.]+)*+"  # a WORD that does not start with '.'
_DOT_WORD = r"\.[\w$.]*+(?:::[\w$.]+)*+"
_ELEM = rf"(?>{WORD}|{NUM}|-{_S}{NUM})"
# Address forms that `statements._address` turns into an Addr (or, for a bad offset, a Raw of the same text):
# [base], [base+off], [base+-off], [base-off], [abs].
_ADDR_SHAPE = rf"\[{_S}(?:{WORD}(?:{_S}(?:\+(?:{_S}-)?|-){_S}{NUM})?|{NUM}){_S}\]"
_VEC_SHAPE = rf"\{{{_S}{_ELEM}(?:{_S},{_S}{_ELEM})*+{_S}\}}"
# The forms start with different characters, so their order (commonest first) cannot change a match.
_OPERAND = rf"(?>{WORD}|{_ADDR_SHAPE}|{NUM}|{_VEC_SHAPE}|-{_S}{NUM}|!{_S}{WORD})"
# Characters that always tokenise to words, numbers or punctuation (never a comment, a string or an error).
_PLAIN = r"[ \t\r\f\v\w$%.,;{}\[\]()+\-!@|<>:=]".replace(r"\w", "A-Za-z0-9_")

_STATEMENT_RE = re.compile(
    rf"""[ \t\r\f\v\n]*+
    (?:
        (?P<ins>(?:@{_S}(?P<neg>!{_S})?(?P<pred>{WORD}){_S})?(?P<op>{WORD}){_S}
            (?P<args>{_OPERAND}(?:{_S},{_S}{_OPERAND})*+)?{_S};)
      | (?P<label>{WORD}){_S}:
      | (?P<comment>//[^\n]*+)
      | (?P<open>\{{)
      | (?P<close>\}})
      | (?P<reg>\.reg(?={WS})(?P<types>(?:{_S}{_DOT_WORD})++){_S}(?P<names>{_NAME}(?:{_S}<{_S}{NUM}{_S}>)?
            (?:{_S},{_S}{_NAME}(?:{_S}<{_S}{NUM}{_S}>)?)*+){_S};)
      | (?P<loc>\.loc(?:{WS}{_PLAIN}*+(?://[^\n]*+)?)?)(?=\n|\Z)
    )""",
    re.VERBOSE,
)
# Splits an operand list that _STATEMENT_RE accepted: only a vector holds a comma, no other operand a brace.
_PIECE_RE = re.compile(r"\{[^}]*\}|[^ \t\r\f\v,{][^,{]*")
# A `.section` (DWARF data: `.b8 17 // DW_TAG_...` lines) with one brace pair and nothing but plain text and
# line comments: the token parser's brace walk would end at the same '}'.
_SECTION_TEXT = r"(?>[ \t\r\f\v\nA-Za-z0-9_$%.,;\[\]()+\-!@|<>:=]++|//[^\n]*+)*+"
_SECTION_RE = re.compile(rf"\.section{_SECTION_TEXT}\{{{_SECTION_TEXT}\}}")
_SIGN_RE = re.compile(r"[+-]")
_REG_NAME_RE = re.compile(rf"({_NAME})(?:{_S}<{_S}({NUM}){_S}>)?")


def _name(text: str) -> Reg | Sym:
    return Reg(text) if text[0] == "%" else Sym(text)


def _scalar(text: str) -> Operand:
    """A word, a number, or '-' and a number (whitespace allowed between them)."""
    c = text[0]
    if c == "%":
        return Reg(text)
    if c in _NAME_START:
        return Sym(text)
    if c == "-":
        return Imm("-" + text[1:].lstrip(_WS_CHARS))
    return Imm(text)


def _address(text: str) -> Operand:
    """An operand matched by _ADDR_SHAPE. A word holds no '+' or '-', so the first one after the base is the
    sign (a float offset's exponent may hold another)."""
    inner = text[1:-1].strip(_WS_CHARS)
    if inner[0] not in _NAME_START:
        return Addr(Imm(inner), 0)
    sign = _SIGN_RE.search(inner)
    if sign is None:
        return Addr(_name(inner), 0)
    base, off, negative = inner[:sign.start()].rstrip(_WS_CHARS), inner[sign.end():].lstrip(_WS_CHARS), False
    if sign.group() == "-":
        negative = True
    elif off[0] == "-":
        negative, off = True, off[1:].lstrip(_WS_CHARS)
    if off[:2].lower() in ("0f", "0d"):
        return Raw(text)
    try:
        value = int(off.rstrip("U"), 0)
    except ValueError:
        return Raw(text)
    return Addr(_name(base), -value if negative else value)


def operand(text: str) -> Operand:
    """The IR of one operand matched by _OPERAND (no surrounding whitespace)."""
    c = text[0]
    if c == "[":
        return _address(text)
    if c == "{":
        return Vec(tuple(_scalar(e.strip(_WS_CHARS)) for e in text[1:-1].split(",")))
    if c == "!":
        return Neg(Reg(text[1:].lstrip(_WS_CHARS)))
    return _scalar(text)


def _reg_decl(m: re.Match) -> RegDecl | None:
    names: list[tuple[str, int | None]] = []
    for name, count in _REG_NAME_RE.findall(m.group("names")):
        if not count:
            names.append((name, None))
            continue
        try:
            names.append((name, int(count.rstrip("U"), 0)))
        except ValueError:
            return None  # the token parser reports it
    return RegDecl(" ".join(m.group("types").split()), names)


def section_end(text: str, start: int) -> int | None:
    """End offset of the `.section` that starts at start, when the fast pattern covers it."""
    m = _SECTION_RE.match(text, start)
    return m.end() if m else None


class FastBody:
    """Statement-at-a-time matching from the cursor's offset; keeps an operand cache for one parse."""

    def __init__(self, cur: TokenCursor):
        self.cur = cur
        self.ops: dict[str, Operand] = {}  # operand text -> IR; operands are frozen, so sharing them is safe

    def _operand(self, piece: str) -> Operand:
        """Cache miss on a piece as split (' %r1'); the stripped text may still hit ('%r1')."""
        text = piece.strip(_WS_CHARS)
        o = self.ops.get(text)
        if o is None:  # most misses are registers: skip the dispatch for them
            o = self.ops[text] = Reg(text) if text[0] == "%" else operand(text)
        self.ops[piece] = o
        return o

    def instruction(self, m: re.Match, line: int) -> Instruction | None:
        pred, neg, op, args = m.group("pred", "neg", "op", "args")
        if op[0] == "%" or (op[0] == "." and pred is None):
            return None  # a directive or an error: the token parser decides
        if args is None:
            return Instruction(op, [], pred, neg is not None, line)
        pieces = _PIECE_RE.findall(args) if "{" in args else args.split(",")
        get = self.ops.get
        ops = [get(p) or self._operand(p) for p in pieces]
        return Instruction(op, ops, pred, neg is not None, line)  # positional: measurably faster

    @staticmethod
    def statement(m: re.Match, kind: str) -> Statement | None:
        if kind == "label":
            return Label(m.group("label"))
        if kind == "comment":
            return Comment(m.group("comment"))
        if kind == "reg":
            return _reg_decl(m)
        if kind == "open":
            return ScopeOpen()
        if kind == "close":
            return ScopeClose()
        text = m.group("loc")
        return Directive(".loc", text if "//" in text else text.rstrip(_WS_CHARS))

    def run(self, out: list[Statement], depth: int) -> int | None:
        """Append the statements matched from the cursor on; return the scope depth, or None when the
        function's closing brace was consumed. Leaves the cursor where matching stopped."""
        cur, text = self.cur, self.cur.text
        start = pos = cur.offset()
        counted, line = start, cur.line_of(start)  # instruction lines, counted as we go
        match, count, append = _STATEMENT_RE.match, text.count, out.append
        while (m := match(text, pos)) is not None:
            kind = m.lastgroup
            if kind == "ins":
                at = m.start("ins")
                line += count("\n", counted, at)
                counted = at
                s = self.instruction(m, line)
            else:
                if kind == "close" and depth == 0:
                    cur.seek(m.end())
                    return None
                s = self.statement(m, kind)
                depth += 1 if kind == "open" else -1 if kind == "close" else 0
            if s is None:
                break
            append(s)
            pos = m.end()
        if pos != start:
            cur.seek(pos)
        return depth
