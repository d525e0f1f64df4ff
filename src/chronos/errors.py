"""Typed errors. Each carries what failed and, where possible, how to reproduce it."""

from __future__ import annotations

from pathlib import Path


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


def one_line(e: BaseException | str, limit: int | None = None) -> str:
    """An error's text on one line (a report row, a log line), cut at `limit` characters."""
    text = " ".join(str(e).split())
    return text if limit is None else text[:limit]


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


class MeasureError(ChronosError):
    """Base of the measurement layer's errors."""


class ConfigError(ChronosError):
    """params.yaml (or a config block given in code) has an unknown key, a wrong type or a bad value."""


class NotApplicable(ChronosError):
    """Raised inside a transform when it cannot change the kernel legally; carries the reason."""


class SpecError(ChronosError):
    """A malformed or inconsistent kernel spec."""


class AtlasError(ChronosError):
    """The atlas plan is missing, incomplete, or disagrees with the current transforms."""


class TrainingDivergedError(ChronosError):
    """The policy's loss or weights stopped being finite: the step size is too large for this problem."""

    def __init__(self, epoch: int, what: str):
        super().__init__(f"GRPO diverged at epoch {epoch}: {what}; lower grpo.lr or grpo.update_iters "
                         "(params.yaml) and rerun", repro="dvc exp run -S grpo.lr=0.0003")
        self.epoch = epoch
        self.history: list[dict] = []  # train_grpo fills in the per-epoch rows before the divergence


class PoolError(MeasureError):
    """Workers cannot be started (no GPU, no pycuda, a broken environment)."""


class WorkerTimeout(MeasureError):
    """A worker did not answer in time."""


class WorkerDied(MeasureError):
    """A worker exited or broke the protocol."""


class MeasurementMissError(MeasureError):
    """The replay store holds no measurement for a requested variant."""

    def __init__(self, kernel: str, actions: tuple[str, ...], ptx_sha256: str, config_hash: str, store: Path):
        self.kernel, self.actions, self.ptx_sha256 = kernel, actions, ptx_sha256
        acts = "+".join(actions) if actions else "(baseline, no actions)"
        super().__init__(
            f"no measurement in {store} for kernel {kernel}, actions {acts}, ptx sha256 {ptx_sha256}, "
            f"measure config {config_hash}; measure it on a GPU machine (measure.backend: gpu) "
            "and commit the store",
            repro=f"python -m chronos.stages.baseline --backend gpu --store {store}")


class ComparisonMissError(MeasurementMissError):
    """The replay store holds no side-by-side comparison of these contenders (chronos.measure.comparison)."""

    def __init__(self, kernel: str, labels: list[str], key: str, timing_hash: str, store: Path):
        MeasureError.__init__(
            self, f"no side-by-side comparison in {store} for kernel {kernel} of {len(labels)} contenders "
            f"({', '.join(labels[:4])}{', ...' if len(labels) > 4 else ''}), key {key[:16]}, timing "
            f"{timing_hash}; measure it on a GPU machine (measure.backend: gpu) and commit the store",
            repro=f"python -m chronos.stages.search_triton --backend gpu --store {store}")
        self.kernel, self.actions, self.ptx_sha256 = kernel, (), key


class CudaFault(MeasureError):
    """A CUDA error while running a variant. `name` is the CUDA error name; sticky => context is gone."""

    def __init__(self, name: str, message: str, *, sticky: bool):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.sticky = sticky


class InstrumentError(MeasureError):
    """The kernel cannot be instrumented (no such entry, no body)."""


class StoreError(MeasureError):
    """A store or atlas file cannot be opened, read (corrupt, truncated, failing its integrity check) or
    written; names the file."""


class SearchError(ChronosError):
    """A search cannot run on a kernel (its baseline is invalid, no legal action, a bad strategy)."""


class TrainingError(ChronosError):
    """Training or rollout data that the learner cannot use (no kernels, masks that forbid the target)."""

