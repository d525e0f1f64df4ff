"""Recursive-descent parser: PTX text -> Module. Every failure is a PTXParseError with line and column."""

from __future__ import annotations

from chronos.errors import PTXParseError
from chronos.ptx.fastpath import section_end
from chronos.ptx.ir import Comment, Directive, Function, Module, Param
from chronos.ptx.statements import StatementParser, resolve_plain_registers

# Performance directives and attributes allowed between an entry's parameter list and its body.
_HEADER_DIRECTIVES = {".maxnreg", ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxclusterrank",
                      ".reqnctapercluster", ".explicitcluster", ".blocksareclusters", ".pragma", ".noreturn",
                      ".abi_preserve", ".abi_preserve_control"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_STATE_SPACES = {".global", ".shared", ".const", ".local", ".param", ".tex"}


class _Parser(StatementParser):
    """Module structure: header, module-scope directives, functions and their parameters."""

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
        k = 0
        while self.peek(k).text in _LINKAGE:
            k += 1
        if self.peek(k).text in (".entry", ".func"):
            return self.function()
        if t.text in (".file", ".loc"):
            toks = self.until_eol()
            return Directive(t.text, self.slice(toks[0], toks[-1]))
        if t.text == ".section":
            return self.section()
        first, last = self.until_semicolon()
        return Directive(t.text, self.slice(first, last))

    def section(self) -> Directive:
        start = self.peek().start
        end = section_end(self.text, start) if self.fast else None
        if end is not None:
            self.seek(end)
            return Directive(".section", self.text[start:end])
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
                fn.body = resolve_plain_registers(self.body())
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
            p.array = self.param_array()
        return p

    def param_array(self) -> str:
        """`[16]` after a parameter name, kept as written."""
        first = self.next()
        while self.peek().text != "]":
            if self.peek().kind in ("eof", "nl") or self.peek().text in (",", ")"):
                raise self.error("unterminated parameter array")
            self.next()
        return self.slice(first, self.next())

def parse(text: str, file: str | None = None) -> Module:
    """Parse PTX text into a Module. Raises chronos.errors.PTXParseError (with .line/.column) on bad input."""
    return parse_with(text, file)


def parse_with(text: str, file: str | None = None, *, fast: bool = True) -> Module:
    """`parse`; fast=False sends every body statement through the token parser instead of the line fast
    path (same result, several times slower: the reference that tests compare the fast path against)."""
    if not isinstance(text, str):
        raise TypeError("parse() takes PTX text (str)")
    p = _Parser(text, file)
    p.fast = fast
    try:
        return p.module()
    except PTXParseError:
        raise
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:  # defensive: never leak them
        line, col = p.line_col(p.peek().start)
        raise PTXParseError(f"malformed PTX: {exc}", line=line, column=col, file=file) from exc
