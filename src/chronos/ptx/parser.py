"""Recursive-descent parser: PTX text -> Module. Every failure is a PTXParseError with line and column."""

from __future__ import annotations

from chronos.errors import PTXParseError
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
from chronos.ptx.lexer import Positions, Token, tokenize

# Directives that end at the end of their line rather than at a ';'.
_LINE_DIRECTIVES = {".loc", ".file", ".version", ".target", ".address_size"}
# Performance directives and attributes allowed between an entry's parameter list and its body.
_HEADER_DIRECTIVES = {".maxnreg", ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxclusterrank",
                      ".reqnctapercluster", ".explicitcluster", ".blocksareclusters", ".pragma", ".noreturn",
                      ".abi_preserve", ".abi_preserve_control"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_STATE_SPACES = {".global", ".shared", ".const", ".local", ".param", ".tex"}


class _Parser:
    def __init__(self, text: str, file: str | None):
        self.text = text
        self.file = file
        self.toks = tokenize(text, file)
        self.last = len(self.toks) - 2  # index of the first of the two eof tokens
        self.i = 0
        self._positions: Positions | None = None

    def line_col(self, offset: int) -> tuple[int, int]:
        if self._positions is None:
            self._positions = Positions(self.text)
        return self._positions.line_col(offset)

    # ------------------------------------------------------------ token helpers
    def peek(self, k: int = 0) -> Token:
        return self.toks[self.i + k]  # k <= 1 and i <= last: the trailing eof pair keeps this in range

    def next(self) -> Token:
        t = self.toks[self.i]
        if self.i < self.last:
            self.i += 1
        return t

    def error(self, msg: str, tok: Token | None = None) -> PTXParseError:
        t = tok or self.peek()
        found = "end of file" if t.kind == "eof" else repr(t.text)
        line, col = self.line_col(t.start)
        return PTXParseError(f"{msg} (found {found})", line=line, column=col, file=self.file)

    def expect(self, text: str) -> Token:
        t = self.peek()
        if t.text != text or t.kind in ("string", "comment"):
            raise self.error(f"expected {text!r}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        t = self.peek()
        if t.kind != kind:
            raise self.error(f"expected {what}")
        return self.next()

    def skip_nl(self) -> None:
        while self.peek().kind == "nl":
            self.i += 1

    def skip_nl_comments(self) -> None:
        while self.peek().kind in ("nl", "comment"):
            self.i += 1

    def slice(self, first: Token, last: Token) -> str:
        return self.text[first.start:last.end]

    def until_eol(self) -> list[Token]:
        out = []
        while self.peek().kind not in ("nl", "eof"):
            out.append(self.next())
        return out

    def until_semicolon(self) -> tuple[Token, Token]:
        """Consume through the next ';' at brace depth 0; return (first, last) tokens for a verbatim slice."""
        first = self.peek()
        depth = 0
        while True:
            t = self.next()
            if t.kind == "eof":
                raise self.error("missing ';'", t)
            if t.kind == "punct":
                if t.text == "{":
                    depth += 1
                elif t.text == "}":
                    depth -= 1
                    if depth < 0:
                        raise self.error("unbalanced '}'", t)
                elif t.text == ";" and depth == 0:
                    return first, t

    # ------------------------------------------------------------ module
    def module(self) -> Module:
        preamble: list[Comment] = []
        self.skip_nl()
        while self.peek().kind == "comment":
            preamble.append(Comment(self.next().text))
            self.skip_nl()
        self.expect(".version")
        version = self.expect_kind("num", "a PTX version number").text
        self.skip_nl_comments()
        self.expect(".target")
        target = []
        for t in self.until_eol():
            if t.kind == "word":
                target.append(t.text)
            elif t.text != ",":
                raise self.error("bad .target list", t)
        if not target:
            raise self.error("empty .target")
        self.skip_nl_comments()
        address_size = None
        if self.peek().text == ".address_size":
            self.next()
            address_size = int(self.expect_kind("num", "an address size").text)
        mod = Module(version=version, target=target, address_size=address_size, preamble=preamble,
                     source=self.file)
        while True:
            self.skip_nl()
            t = self.peek()
            if t.kind == "eof":
                return mod
            if t.kind == "comment":
                mod.items.append(Comment(self.next().text))
            else:
                mod.items.append(self.top_item())

    def top_item(self) -> Function | Directive:
        t = self.peek()
        if t.kind != "word" or not t.text.startswith("."):
            raise self.error("expected a directive at module scope")
        j = self.i
        while j < self.last and self.toks[j].text in _LINKAGE:
            j += 1
        if self.toks[j].text in (".entry", ".func"):
            return self.function()
        if t.text in (".file", ".loc"):
            toks = self.until_eol()
            return Directive(t.text, self.slice(toks[0], toks[-1]))
        if t.text == ".section":
            return self.section()
        first, last = self.until_semicolon()
        return Directive(t.text, self.slice(first, last))

    def section(self) -> Directive:
        first = self.next()
        depth, last = 0, first
        while True:
            t = self.next()
            if t.kind == "eof":
                raise self.error("unterminated .section", t)
            last = t
            if t.text == "{" and t.kind == "punct":
                depth += 1
            elif t.text == "}" and t.kind == "punct":
                depth -= 1
                if depth <= 0:
                    return Directive(".section", self.slice(first, last))

    # ------------------------------------------------------------ functions
    def function(self) -> Function:
        linkage = []
        while self.peek().text in _LINKAGE:
            linkage.append(self.next().text)
        kind = self.next().text
        self.skip_nl()
        ret_params: list[Param] = []
        if kind == ".func" and self.peek().text == "(":
            ret_params = self.param_list()
            self.skip_nl()
        name = self.expect_kind("word", "a function name").text
        fn = Function(kind=kind, name=name, linkage=linkage, ret_params=ret_params)
        self.skip_nl()
        if self.peek().text == "(":
            fn.params = self.param_list()
        while True:
            self.skip_nl_comments()
            t = self.peek()
            if t.text == ";":
                self.next()
                return fn
            if t.text == "{" and t.kind == "punct":
                self.next()
                fn.body = _resolve_plain_registers(self.body())
                return fn
            if t.kind == "word" and t.text in _HEADER_DIRECTIVES:
                self.next()
                args = []
                while self.peek().kind not in ("nl", "eof") and self.peek().text not in ("{", ";"):
                    args.append(self.next())
                if t.text == ".pragma" and self.peek().text == ";":
                    self.next()
                value = self.slice(args[0], args[-1]) if args else ""
                if t.text == ".noreturn" or t.text.startswith(".abi"):
                    fn.attrs.append(t.text if not value else f"{t.text} {value}")
                else:
                    fn.directives.append((t.text, value))
                continue
            raise self.error(f"unexpected token in the header of {name}")

    def param_list(self) -> list[Param]:
        self.expect("(")
        params: list[Param] = []
        while True:
            self.skip_nl_comments()
            if self.peek().text == ")":
                self.next()
                return params
            params.append(self.param())
            self.skip_nl_comments()
            if self.peek().text == ",":
                self.next()
            elif self.peek().text != ")":
                raise self.error("expected ',' or ')' in a parameter list")

    def param(self) -> Param:
        space = self.next()
        if space.text not in (".param", ".reg"):
            raise self.error("expected .param", space)
        dtype = name = None
        p = Param(dtype="", name="", space=space.text)
        while True:
            t = self.peek()
            if t.kind != "word":
                raise self.error("bad parameter declaration")
            self.next()
            if t.text == ".align":
                val = int(self.expect_kind("num", "an alignment").text.rstrip("U"), 0)
                if p.is_ptr:
                    p.ptr_align = val
                else:
                    p.align = val
            elif t.text == ".ptr":
                p.is_ptr = True
            elif p.is_ptr and t.text in _STATE_SPACES:
                p.ptr_space = t.text
            elif t.text.startswith("."):
                dtype = t.text if dtype is None else f"{dtype} {t.text}"
            else:
                name = t.text
                break
        if dtype is None:
            raise self.error(f"parameter {name} has no type")
        p.dtype, p.name = dtype, name
        if self.peek().text == "[":
            first = self.next()
            while self.peek().text != "]":
                if self.peek().kind in ("eof", "nl") or self.peek().text in (",", ")"):
                    raise self.error("unterminated parameter array")
                self.next()
            p.array = self.slice(first, self.next())
        return p

    # ------------------------------------------------------------ bodies
    def body(self) -> list[Statement]:
        out: list[Statement] = []
        depth = 0
        while True:
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
                depth += 1
            elif t.text == "}" and t.kind == "punct":
                self.next()
                if depth == 0:
                    return out
                out.append(ScopeClose())
                depth -= 1
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

    def body_directive(self) -> Statement:
        t = self.peek()
        if t.text == ".reg":
            return self.reg_decl()
        if t.text in _LINE_DIRECTIVES:
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
                return Instruction(op.text, operands, pred, neg, line=self.line_col(start.start)[0])
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
                if t.text in "[({":
                    depth += 1
                elif t.text in "])}":
                    depth -= 1
                    if depth < 0:
                        raise self.error("unbalanced bracket", t)
                elif t.text in ",;" and depth == 0:
                    break
                elif t.text == ";":
                    raise self.error("';' inside brackets", t)
            if t.kind == "nl":
                self.next()
                continue
            if t.kind == "comment":
                raise self.error("comment inside an operand", t)
            toks.append(self.next())
        if not toks:
            raise self.error("empty operand", first)
        return self.classify(toks)

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


def _resolve_plain_registers(body: list[Statement]) -> list[Statement]:
    """Registers may be declared without '%' (`.reg .pred complete;` in Triton's inline asm): turn the Sym
    operands that name such a register into Regs, so that def/use analysis sees them."""
    plain = {n for s in body if isinstance(s, RegDecl) for n, c in s.names if c is None and not n.startswith("%")}
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


def parse(text: str, file: str | None = None) -> Module:
    """Parse PTX text into a Module. Raises chronos.errors.PTXParseError (with .line/.column) on bad input."""
    if not isinstance(text, str):
        raise TypeError("parse() takes PTX text (str)")
    p = _Parser(text, file)
    try:
        return p.module()
    except PTXParseError:
        raise
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:  # defensive: never leak these
        line, col = p.line_col(p.peek().start)
        raise PTXParseError(f"malformed PTX: {exc}", line=line, column=col, file=file) from exc
