"""Function bodies: statements, instructions and operands (the part of the parser that runs per line)."""

from __future__ import annotations

from chronos.ptx.cursor import TokenCursor
from chronos.ptx.fastpath import FastBody
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
from chronos.ptx.lexer import Token

# Directives that end at the end of their line rather than at a ';'.
LINE_DIRECTIVES = {".loc", ".file", ".version", ".target", ".address_size"}


class StatementParser(TokenCursor):
    """Parses what sits between an entry's braces."""

    fast = True  # False: every statement through the tokens (the reference the fast path is tested against)

    def body(self) -> list[Statement]:
        out: list[Statement] = []
        depth: int | None = 0
        fast = FastBody(self) if self.fast else None
        while True:
            if fast is not None:
                depth = fast.run(out, depth)
                if depth is None:
                    return out
            depth = self.body_token(out, depth)
            if depth is None:
                return out

    def body_token(self, out: list[Statement], depth: int) -> int | None:
        """Consume a newline or one statement; return the new scope depth, or None after the closing '}'."""
        t = self.peek()
        if t.kind == "nl":
            self.next()
        elif t.kind == "eof":
            raise self.error("unterminated function body", t)
        elif t.kind == "comment":
            out.append(Comment(self.next().text))
        elif t.text == "{" and t.kind == "punct":
            self.next()
            out.append(ScopeOpen())
            return depth + 1
        elif t.text == "}" and t.kind == "punct":
            self.next()
            if depth == 0:
                return None
            out.append(ScopeClose())
            return depth - 1
        elif t.kind == "word" and self.peek(1).text == ":" and self.peek(1).kind == "punct":
            self.next()
            self.next()
            out.append(Label(t.text))
        elif t.kind == "word" and t.text.startswith(".") and not t.text.startswith(".."):
            out.append(self.body_directive())
        elif t.text == "@" or t.kind == "word":
            out.append(self.instruction())
        else:
            raise self.error("expected an instruction, label or directive")
        return depth

    def body_directive(self) -> Statement:
        t = self.peek()
        if t.text == ".reg":
            return self.reg_decl()
        if t.text in LINE_DIRECTIVES:
            toks = self.until_eol()
            return Directive(t.text, self.slice(toks[0], toks[-1]))
        first, last = self.until_semicolon()
        return Directive(t.text, self.slice(first, last))

    def reg_decl(self) -> RegDecl:
        self.next()
        dtype = []
        while self.peek().kind == "word" and self.peek().text.startswith("."):
            dtype.append(self.next().text)
        if not dtype:
            raise self.error("a .reg declaration needs a type")
        names: list[tuple[str, int | None]] = []
        while True:
            name = self.expect_kind("word", "a register name").text
            count = None
            if self.peek().text == "<":
                self.next()
                count = int(self.expect_kind("num", "a register count").text.rstrip("U"), 0)
                self.expect(">")
            names.append((name, count))
            if self.peek().text == ",":
                self.next()
                continue
            self.expect(";")
            return RegDecl(" ".join(dtype), names)

    def instruction(self) -> Instruction:
        pred, neg = None, False
        start = self.peek()
        if self.peek().text == "@":
            self.next()
            if self.peek().text == "!":
                self.next()
                neg = True
            pred = self.expect_kind("word", "a predicate register").text
        op = self.expect_kind("word", "an opcode")
        if op.text.startswith("%"):
            raise self.error("expected an opcode", op)
        operands: list[Operand] = []
        while True:
            self.skip_nl_comments()
            if self.peek().text == ";" and self.peek().kind == "punct":
                self.next()
                return Instruction(op.text, operands, pred, neg, line=self.line_of(start.start))
            operands.append(self.operand())
            self.skip_nl_comments()
            t = self.peek()
            if t.text == ",":
                self.next()
            elif t.text != ";":
                raise self.error(f"expected ',' or ';' after an operand of {op.text}")

    def operand(self) -> Operand:
        """One operand: tokens up to a top-level ',' or ';'; simple forms are typed, the rest kept as Raw."""
        t = self.peek()
        if t.text == "{" and t.kind == "punct":
            return self.vector()
        first = t
        toks: list[Token] = []
        depth = 0
        while True:
            t = self.peek()
            if t.kind == "eof":
                raise self.error("unterminated instruction", t)
            if t.kind == "punct":
                depth = self.nest(t, depth)
                if depth is None:
                    break
            if t.kind == "nl":
                self.next()
                continue
            if t.kind == "comment":
                raise self.error("comment inside an operand", t)
            toks.append(self.next())
        if not toks:
            raise self.error("empty operand", first)
        return self.classify(toks)

    def nest(self, t: Token, depth: int) -> int | None:
        """Bracket depth after punctuation t in an operand; None at the ',' or ';' that ends the operand."""
        if t.text in "[({":
            return depth + 1
        if t.text in "])}":
            if depth == 0:
                raise self.error("unbalanced bracket", t)
            return depth - 1
        if t.text in ",;" and depth == 0:
            return None
        if t.text == ";":
            raise self.error("';' inside brackets", t)
        return depth

    def classify(self, toks: list[Token]) -> Operand:
        texts = [t.text for t in toks]
        if len(toks) == 1:
            t = toks[0]
            if t.kind == "num":
                return Imm(t.text)
            if t.kind == "word":
                return Reg(t.text) if t.text.startswith("%") else Sym(t.text)
        if texts == ["-", texts[-1]] and toks[1].kind == "num":
            return Imm("-" + texts[1])
        if texts[0] == "!" and len(toks) == 2 and toks[1].kind == "word":
            return Neg(Reg(texts[1]))
        if texts[0] == "[" and texts[-1] == "]":
            addr = _address(toks[1:-1])
            if addr is not None:
                return addr
        return Raw(self.slice(toks[0], toks[-1]))

    def vector(self) -> Vec:
        self.expect("{")
        elems: list[Operand] = []
        while True:
            self.skip_nl_comments()
            t = self.next()
            if t.kind == "word":
                elems.append(Reg(t.text) if t.text.startswith("%") else Sym(t.text))
            elif t.kind == "num":
                elems.append(Imm(t.text))
            elif t.text == "-" and self.peek().kind == "num":
                elems.append(Imm("-" + self.next().text))
            else:
                raise self.error("bad vector element", t)
            self.skip_nl_comments()
            t = self.next()
            if t.text == "}":
                if not elems:
                    raise self.error("empty vector", t)
                return Vec(tuple(elems))
            if t.text != ",":
                raise self.error("expected ',' or '}' in a vector operand", t)


def resolve_plain_registers(body: list[Statement]) -> list[Statement]:
    """Registers may be declared without '%' (`.reg .pred complete;` in Triton's inline asm): turn the Sym
    operands that name such a register into Regs, so that def/use analysis sees them."""
    plain = {n for s in body if isinstance(s, RegDecl)
             for n, c in s.names if c is None and not n.startswith("%")}
    if not plain:
        return body

    def fix(o: Operand) -> Operand:
        if isinstance(o, Sym) and o.name in plain:
            return Reg(o.name)
        if isinstance(o, Vec):
            return Vec(tuple(fix(e) for e in o.elems))
        if isinstance(o, Addr) and isinstance(o.base, Sym) and o.base.name in plain:
            return Addr(Reg(o.base.name), o.offset)
        return o

    for s in body:
        if isinstance(s, Instruction):
            s.operands = [fix(o) for o in s.operands]
    return body


def _address(toks: list[Token]) -> Addr | None:
    """[base], [base+imm], [base+-imm], [base-imm], [imm]; None for anything else (kept Raw)."""
    if not toks:
        return None
    b = toks[0]
    if b.kind == "word":
        base: Reg | Sym | Imm = Reg(b.text) if b.text.startswith("%") else Sym(b.text)
    elif b.kind == "num" and len(toks) == 1:
        return Addr(Imm(b.text), 0)
    else:
        return None
    rest = [t.text for t in toks[1:]]
    if not rest:
        return Addr(base, 0)
    sign = 1
    if rest[0] == "+":
        rest = rest[1:]
        if rest[:1] == ["-"]:
            sign, rest = -1, rest[1:]
    elif rest[0] == "-":
        sign, rest = -1, rest[1:]
    else:
        return None
    if len(rest) != 1 or toks[-1].kind != "num" or rest[0][:2].lower() in ("0f", "0d"):
        return None
    try:
        return Addr(base, sign * int(rest[0].rstrip("U"), 0))
    except ValueError:
        return None


