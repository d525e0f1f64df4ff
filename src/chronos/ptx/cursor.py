"""Token cursor: the look-ahead, expectation and verbatim-slice helpers the PTX parser is built on.

Tokens are made lazily, a line at a time, from the current offset: the body fast path (`fastpath.py`)
consumes most lines straight from the text, and `seek` restarts tokenising where it stopped.
"""

from __future__ import annotations

from chronos.errors import PTXParseError
from chronos.ptx.lexer import Token, iter_tokens, line_col


class TokenCursor:
    """A position in one PTX text, with token look-ahead."""

    def __init__(self, text: str, file: str | None):
        self.text = text
        self.file = file
        self._line_at = (0, 1)  # (offset, its line): parsing moves forward, so count lines incrementally
        self.seek(0)

    def seek(self, offset: int) -> None:
        """Drop the look-ahead and tokenise afresh from offset, which must be a token boundary."""
        self.toks: list[Token] = []
        self.i = 0
        self._base = offset
        self._iter = iter_tokens(self.text, offset)
        self._done = False

    def offset(self) -> int:
        """Where the next token starts (or the whitespace before it)."""
        if self.i < len(self.toks):
            return self.toks[self.i].start
        return self.toks[-1].end if self.toks else self._base

    def line_of(self, offset: int) -> int:
        at, line = self._line_at
        if offset < at:
            at, line = 0, 1
        line += self.text.count("\n", at, offset)
        self._line_at = (offset, line)
        return line

    def line_col(self, offset: int) -> tuple[int, int]:
        return line_col(self.text, offset)

    def _more(self) -> None:
        """Tokenise through the next newline (or to the end, then add the two eof tokens)."""
        toks = self.toks
        for t in self._iter:
            if t.kind == "bad":
                line, col = self.line_col(t.start)
                raise PTXParseError(f"unexpected character {t.text!r}", line=line, column=col, file=self.file)
            toks.append(t)
            if t.kind == "nl":
                return
        n = len(self.text)
        toks.append(Token("eof", "", n, n))
        toks.append(Token("eof", "", n, n))
        self._done = True

    # ------------------------------------------------------------ token helpers
    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        while j >= len(self.toks):
            if self._done:
                return self.toks[-1]
            self._more()
        return self.toks[j]

    def next(self) -> Token:
        t = self.peek()
        if t.kind != "eof":  # the cursor stays on the end of the text
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
