"""Typed errors. Each carries what failed and, where possible, how to reproduce it."""

from __future__ import annotations


class ChronosError(Exception):
    """Base of every error Chronos raises on purpose."""

    def __init__(self, message: str, *, repro: str | None = None):
        super().__init__(message)
        self.message = message
        self.repro = repro

    def __str__(self) -> str:
        if self.repro:
            return f"{self.message} (reproduce: {self.repro})"
        return self.message


class PTXParseError(ChronosError):
    """Malformed PTX. Carries the file (when known), 1-based line and column."""

    def __init__(self, message: str, *, line: int, column: int, file: str | None = None):
        self.file = file
        self.line = line
        self.column = column
        where = f"{file or '<ptx>'}:{line}:{column}"
        super().__init__(f"{where}: {message}")


class ToolchainError(ChronosError):
    """A required tool (ptxas, a GPU, pycuda) is missing or failed."""


class PtxasError(ToolchainError):
    """ptxas rejected a PTX file. `log` is its stderr; `repro` is the command line."""

    def __init__(self, message: str, *, log: str = "", repro: str | None = None):
        super().__init__(message, repro=repro)
        self.log = log


class CheckpointError(ChronosError):
    """A checkpoint is missing, malformed, or not loadable with weights_only=True."""


class UnknownActionError(ChronosError):
    """An action name that is not one of the 21 in `chronos.actions.ACTION_NAMES`."""


class IllegalActionError(ChronosError):
    """A transform that is not legal on this kernel: already applied, in conflict, unsafe, or a no-op."""

    def __init__(self, action: str, reason: str, *, kernel: str | None = None, repro: str | None = None):
        self.action = action
        self.reason = reason
        self.kernel = kernel
        where = f" on {kernel}" if kernel else ""
        super().__init__(f"{action} is illegal{where}: {reason}", repro=repro)
