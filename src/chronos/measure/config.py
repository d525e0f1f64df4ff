"""What a measurement is: its configuration (hashed into every stored record) and the variant identity."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields

from chronos.errors import ChronosError
from chronos.kernels.spec import KernelSpec


class MeasureError(ChronosError):
    """Base of the measurement layer's errors."""


class ConfigError(MeasureError):
    """A measure: block in params.yaml with unknown keys or bad values."""


# Keys that change what is measured go into config_hash(); operational keys (how many workers, where the
# watchdog fires, how many ptxas processes) do not, so changing them never invalidates the store.
_OPERATIONAL = frozenset({"watchdog_s", "compile_workers", "gpus", "backend", "startup_timeout_s",
                          "one_gpu_per_kernel"})


@dataclass(frozen=True)
class MeasureConfig:
    """How every variant is measured. `config_hash()` keys the store: change a measured knob, re-measure.

    Attributes:
        warmup: untimed launches before the event-timed reps (module load, caches, clocks).
        reps: event-timed launches; time_ms is their median and IQR.
        cycle_samples: launches of the %clock64-instrumented kernel; per launch the max over threads,
            then median and IQR over the samples.
        input_draws: fresh random input draws on which baseline and variant outputs must agree bit-exactly.
        seed: seed of the numpy Generator that draws inputs (draw d of argument i uses (seed, d, i)).
        l2_flush_bytes: a buffer this large is written between timed reps (the H200's L2 is ~60 MB).
        flush_l2: whether to flush L2 between timed reps at all.
        poison_byte: byte written over every output buffer before each launch (0xFF: NaN for floats).
        arch: ptxas target for the cubins (sm_90a runs Hopper-only instructions; sm_90 PTX assembles too).
        max_cycle_buffer_bytes: device buffer for per-thread cycle deltas; samples are batched to fit.
        watchdog_s: a measurement not answered within this is a hang: the worker is killed ("timeout").
        compile_workers: parallel ptxas processes (0: the CPU count).
        gpus: worker processes, one per GPU (CUDA_VISIBLE_DEVICES=i).
        startup_timeout_s: how long a fresh worker may take to create its CUDA context.
        one_gpu_per_kernel: with several GPUs, all variants of one kernel in a run go to one GPU (the kernels
            of a batch take turns), so that they are compared on one chip: two H200s differ by a shift of
            ~0.7% (median over kernels, cycles) that would otherwise mix into one kernel's comparisons.
        gpu_warmup_s: each worker keeps the GPU busy this long before its first measurement, so that no
            measurement runs while the clocks ramp up from idle (hashed: it changes what is measured).
    """

    warmup: int = 5
    reps: int = 50
    cycle_samples: int = 200
    input_draws: int = 2
    seed: int = 0
    l2_flush_bytes: int = 128 << 20
    flush_l2: bool = True
    poison_byte: int = 0xFF
    arch: str = "sm_90a"
    max_cycle_buffer_bytes: int = 256 << 20
    watchdog_s: float = 60.0
    compile_workers: int = 0
    gpus: int = 1
    startup_timeout_s: float = 120.0
    gpu_warmup_s: float = 2.0
    one_gpu_per_kernel: bool = True

    def __post_init__(self) -> None:
        if self.reps < 1 or self.cycle_samples < 1 or self.warmup < 0:
            raise ConfigError(f"measure: reps and cycle_samples must be >= 1, warmup >= 0 (got {self})")
        if self.input_draws < 2:
            raise ConfigError("measure: input_draws must be >= 2 (verification needs two fresh draws)")
        if not 0 <= self.poison_byte <= 255 or self.watchdog_s <= 0 or self.gpus < 1:
            raise ConfigError(f"measure: bad poison_byte/watchdog_s/gpus in {self}")

    def measured(self) -> dict:
        """The knobs that define the measurement (hashed)."""
        return {k: v for k, v in asdict(self).items() if k not in _OPERATIONAL}

    def config_hash(self) -> str:
        """Stable 16-hex-digit hash of the measured knobs (sorted-key JSON, so field order never matters)."""
        blob = json.dumps(self.measured(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_params(cls, block: dict | None) -> MeasureConfig:
        """From params.yaml's `measure:` block; `backend` is read by the stage, other unknown keys fail."""
        block = dict(block or {})
        block.pop("backend", None)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(block) - known)
        if unknown:
            raise ConfigError(f"measure: unknown keys {unknown}; known: {sorted(known)}")
        return cls(**block)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Variant:
    """One candidate: the kernel's spec, the (transformed) PTX text and the actions that produced it.

    Identity is the sha256 of the PTX text: two action sequences that produce the same PTX are the same
    variant. The baseline is the variant with no actions.
    """

    spec: KernelSpec
    ptx: str
    actions: tuple[str, ...] = field(default=())
    recipe: tuple[str, str] | None = None
    """(specs.json path, entry): realise `actions` (canonical order) in the compile process instead of
    shipping `ptx` (left empty); used by the atlas, whose parent process would otherwise do it serially."""

    @property
    def ptx_sha256(self) -> str:
        return sha256_text(self.ptx)

    @property
    def kernel(self) -> str:
        return self.spec.kernel

    def describe(self) -> str:
        acts = "+".join(self.actions) if self.actions else "baseline"
        return f"{self.spec.kernel} [{acts}] ptx {self.ptx_sha256[:12]}"
