"""Token cursor: the look-ahead, expectation and verbatim-slice helpers the PTX parser is built on."""

from __future__ import annotations

from chronos.errors import PTXParseError
from chronos.ptx.lexer import Positions, Token, tokenize


class TokenCursor:
    """A position in the token list of one PTX text, with one token of look-ahead."""

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

