"""Every knob of the pipeline, typed: one frozen dataclass per params.yaml block, each default written once.

`load(path)` is the only place params.yaml is parsed. It rejects unknown keys and wrong types with a
`ConfigError` naming the dotted key, so a typo never falls back to a default silently. Library code takes
these dataclasses (or plain arguments), never the file. `dvc exp run -S key=value` edits params.yaml, so
experiments go through the same checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from chronos.config_checks import check_gemm_tile, check_heldout
from chronos.config_timing import CensusConfig, HeadroomConfig, HeldoutConfig, RandomTimeConfig, TimingConfig
from chronos.config_timing import check as _check
from chronos.errors import ConfigError

# Keys that change what is measured go into MeasureConfig.config_hash(); operational keys (how many workers,
# where the watchdog fires, how many ptxas processes) do not, so changing them never invalidates the store.
_OPERATIONAL = frozenset({"watchdog_s", "compile_workers", "gpus", "backend", "startup_timeout_s",
                          "one_gpu_per_kernel"})


@dataclass(frozen=True)
class GemmTileConfig:
    """The seed's gemm_tile kernels, one per (m, n, k)."""

    m: tuple[int, ...] = (2, 4, 6, 8)
    n: tuple[int, ...] = (2, 4, 6, 8)
    k: tuple[int, ...] = (2, 4, 6, 8)
    target: str = "sm_90"
    ptx_version: str = "8.0"

    def __post_init__(self) -> None:
        check_gemm_tile(self.m, self.n, self.k, self.target, self.ptx_version)


@dataclass(frozen=True)
class KernelsConfig:
    gemm_tile: GemmTileConfig = field(default_factory=GemmTileConfig)


@dataclass(frozen=True)
class SplitConfig:
    """gemm_tile kernels never trained on (BC and GRPO), reported separately."""

    heldout_kernels: tuple[str, ...] = ()


@dataclass(frozen=True)
class EnvConfig:
    """Episode and reward settings: the only owner of them (GRPO and predict take theirs from here)."""

    max_steps: int = 6
    """Most transforms per episode; the episode is truncated after this many (the seed's 6)."""
    step_cost: float = 0.0
    """Subtracted from the terminal reward once per applied transform (0 = the seed's outcome-only reward)."""
    invalid_penalty: float = -1.0
    """Terminal reward when the final variant is invalid (wrong output, ptxas refusal, no cycles, ...)."""
    ptxas_legality: bool = False
    """Ask ptxas whether a register budget is accepted when building the mask (slow: one ptxas run per budget
    per state). Off: budgets are legal by construction and a ptxas refusal shows up as an invalid variant,
    exactly as the exhaustive atlas records it."""

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "env.max_steps", f"must be >= 1, got {self.max_steps}")


@dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning of the greedy demonstrations (the seed: 50 epochs)."""

    epochs: int = 50
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 1e-4
    seed: int = 0
    """Seeds the initial weights, the kernel split and the batch order."""
    hidden: int = 128
    """Hidden width of the policy MLP."""
    dropout: float = 0.1
    heldout_fraction: float = 0.25
    """Fraction of the demonstrations' kernels held out when no explicit held-out list is given."""

    def __post_init__(self) -> None:
        _check(self.epochs >= 1, "bc.epochs", f"must be >= 1, got {self.epochs}")
        _check(self.lr > 0, "bc.lr", f"must be > 0, got {self.lr}")
        _check(self.batch_size >= 1, "bc.batch_size", f"must be >= 1, got {self.batch_size}")
        _check(self.hidden >= 1, "bc.hidden", f"must be >= 1, got {self.hidden}")
        _check(0 <= self.dropout < 1, "bc.dropout", f"must be in [0, 1), got {self.dropout}")
        _check(0 <= self.heldout_fraction < 1, "bc.heldout_fraction", f"in [0, 1): {self.heldout_fraction}")


TEMPERATURE_SCHEDULES = ("linear", "cosine", "exponential", "constant")


@dataclass(frozen=True)
class GRPOConfig:
    """DA-GRPO (rewards from the measurement backend; on replay, the atlas)."""

    epochs: int = 450
    group_size: int = 8
    """1 anchor from the BC reference + (group_size - 1) rollouts with forced, distinct first actions."""
    clip_eps: float = 0.2
    beta: float = 0.01
    """KL penalty against the BC reference."""
    lr: float = 1e-3
    update_iters: int = 4
    max_grad_norm: float = 1.0
    temperature_start: float = 1.0
    temperature_end: float = 0.5
    temperature_schedule: str = "linear"
    anchor: str = "greedy"
    """greedy: the reference's greedy rollout is the anchor; sample: it is sampled."""
    forced_step_in_loss: bool = True
    off_policy_ratio: str = "current"
    """"Old" prob. of forced first steps and anchor steps: current (policy's) | behaviour (1 if fixed)."""
    max_steps: int = EnvConfig.max_steps
    step_cost: float = EnvConfig.step_cost
    invalid_penalty: float = EnvConfig.invalid_penalty
    seed: int = 0
    log_interval: int = 25
    """Log a progress line every this many epochs (0: none); the best checkpoint's pick runs every epoch."""

    def __post_init__(self) -> None:
        _check(self.epochs >= 1, "grpo.epochs", f"must be >= 1, got {self.epochs}")
        _check(self.group_size >= 2, "grpo.group_size", f"must be >= 2, got {self.group_size}")
        _check(self.lr > 0, "grpo.lr", f"must be > 0, got {self.lr}")
        _check(self.update_iters >= 1, "grpo.update_iters", f"must be >= 1, got {self.update_iters}")
        choices = {"temperature_schedule": TEMPERATURE_SCHEDULES, "anchor": ("greedy", "sample"),
                   "off_policy_ratio": ("current", "behaviour")}
        for key, allowed in choices.items():
            value = getattr(self, key)
            _check(value in allowed, f"grpo.{key}", f"must be one of {allowed}, got {value!r}")
        _check(self.max_steps >= 1, "grpo.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(self.log_interval >= 0, "grpo.log_interval", f"must be >= 0, got {self.log_interval}")

    @property
    def env(self) -> EnvConfig:
        return EnvConfig(max_steps=self.max_steps, step_cost=self.step_cost,
                         invalid_penalty=self.invalid_penalty)


@dataclass(frozen=True)
class PredictConfig:
    max_steps: int = EnvConfig.max_steps
    """Greedy steps per kernel, as the seed's inference."""
    beam: int = 8
    """The optimize path also measures the policy's `beam` most probable sets (1: greedy only)."""

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "predict.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(self.beam >= 1, "predict.beam", f"must be >= 1, got {self.beam}")


@dataclass(frozen=True)
class MeasureConfig:
    """How every variant is measured. `config_hash()` keys the store: change a measured knob, re-measure.

    Attributes:
        backend: gpu | replay | auto (gpu if a CUDA device is visible, else replay from the store).
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

    backend: str = "auto"
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
        _check(self.backend in ("gpu", "replay", "auto"), "measure.backend",
               f"must be gpu, replay or auto, got {self.backend!r}")
        _check(self.reps >= 1, "measure.reps", f"must be >= 1, got {self.reps}")
        _check(self.cycle_samples >= 1, "measure.cycle_samples", f"must be >= 1, got {self.cycle_samples}")
        _check(self.warmup >= 0, "measure.warmup", f"must be >= 0, got {self.warmup}")
        _check(self.input_draws >= 2, "measure.input_draws",
               "must be >= 2 (verification needs two fresh draws)")
        _check(0 <= self.poison_byte <= 255, "measure.poison_byte", f"must be a byte, got {self.poison_byte}")
        _check(self.watchdog_s > 0, "measure.watchdog_s", f"must be > 0, got {self.watchdog_s}")
        _check(self.gpus >= 1, "measure.gpus", f"must be >= 1, got {self.gpus}")

    def measured(self) -> dict:
        """The knobs that define the measurement (hashed)."""
        return {k: v for k, v in asdict(self).items() if k not in _OPERATIONAL}

    def config_hash(self) -> str:
        """Stable 16-hex-digit hash of the measured knobs (sorted-key JSON, so field order never matters)."""
        blob = json.dumps(self.measured(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GreedySearchConfig:
    """The seed's teacher: at each step measure every legal action, keep the best if it beats the noise."""

    families: tuple[str, ...] = ("gemm_tile",)
    max_steps: int = EnvConfig.max_steps
    min_gain: float = 0.005
    """The gain must be at least this fraction of the current cycles, and the IQR bands must not overlap."""

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "search.greedy.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(0 <= self.min_gain < 1, "search.greedy.min_gain", f"must be in [0, 1), got {self.min_gain}")


@dataclass(frozen=True)
class RandomSearchConfig:
    """Seeded random legal sequences until `budget` distinct action sets are measured."""

    families: tuple[str, ...] = ("gemm_tile",)
    seed: int = 0
    max_steps: int = EnvConfig.max_steps
    budget: int = 64
    """For kernels greedy did not visit (the others get greedy's count)."""

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "search.random.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(self.budget >= 1, "search.random.budget", f"must be >= 1, got {self.budget}")


@dataclass(frozen=True)
class AtlasSearchConfig:
    """Every legal action set, grouped by SASS (atlas_plan, CPU) and measured (atlas, GPU)."""

    families: tuple[str, ...] = ("gemm_tile",)


@dataclass(frozen=True)
class TritonSearchConfig:
    """The Triton suite's tiers (stages search_triton, evaluate, aa): greedy in wall time is the reference.
    One family per tier: triton (33 small kernels), triton_llm (the same families at LLM sizes)."""

    families: tuple[str, ...] = ("triton", "triton_llm")


@dataclass(frozen=True)
class SearchConfig:
    greedy: GreedySearchConfig = field(default_factory=GreedySearchConfig)
    random: RandomSearchConfig = field(default_factory=RandomSearchConfig)
    atlas: AtlasSearchConfig = field(default_factory=AtlasSearchConfig)
    triton: TritonSearchConfig = field(default_factory=TritonSearchConfig)
    headroom: HeadroomConfig = field(default_factory=HeadroomConfig)
    census: CensusConfig = field(default_factory=CensusConfig)
    random_time: RandomTimeConfig = field(default_factory=RandomTimeConfig)


@dataclass(frozen=True)
class ConfirmConfig:
    """Stage confirm: contenders re-measured side by side (GpuRunner.measure_rounds)."""

    top: int = 8
    """The atlas's best SASS variants per kernel taken along (the oracle's candidates)."""
    rounds: int = 8
    """Interleaved rounds; each takes 1/rounds of measure.reps and measure.cycle_samples."""
    realloc: bool = False
    """Fresh buffers (behind a spacer) every round: averages over placements in memory."""

    def __post_init__(self) -> None:
        _check(self.top >= 1, "confirm.top", f"must be >= 1, got {self.top}")
        _check(self.rounds >= 1, "confirm.rounds", f"must be >= 1, got {self.rounds}")


@dataclass(frozen=True)
class Config:
    """params.yaml, whole."""

    actions: str = "seed"
    """The action space (chronos.actions): seed (21 logits) or v2 (47); sets the policy's head and mask."""
    kernels: KernelsConfig = field(default_factory=KernelsConfig)
    split: SplitConfig = field(default_factory=SplitConfig)
    bc: BCConfig = field(default_factory=BCConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    predict: PredictConfig = field(default_factory=PredictConfig)
    measure: MeasureConfig = field(default_factory=MeasureConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    confirm: ConfirmConfig = field(default_factory=ConfirmConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    heldout: HeldoutConfig = field(default_factory=HeldoutConfig)

    def __post_init__(self) -> None:
        spaces = ("seed", "v2")  # chronos.actions.SPACES' names: config sits below actions in the layers
        _check(self.actions in spaces, "actions", f"must be one of {spaces}, got {self.actions!r}")
        check_heldout(self.split.heldout_kernels, *(getattr(self.kernels.gemm_tile, d) for d in "mnk"))


def _coerce(value, hint, key: str):
    """`value` checked against the type hint `hint` (YAML gives lists for tuples and ints for floats)."""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, key)
    if origin is tuple:
        _check(isinstance(value, list | tuple), key, f"must be a list, got {type(value).__name__} {value!r}")
        item = typing.get_args(hint)[0]
        return tuple(_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is types.UnionType or origin is typing.Union:
        raise TypeError(f"{key}: config fields must not be unions")  # a programming error, not user input
    if hint is bool:
        _check(isinstance(value, bool), key, f"must be true or false, got {value!r}")
    elif hint is int:
        _check(type(value) is int, key, f"must be an integer, got {value!r}")  # bool is an int subclass
    elif hint is float:
        _check(isinstance(value, int | float) and not isinstance(value, bool), key,
               f"must be a number, got {value!r}")
        return float(value)
    elif hint is str:
        # ptx_version: "8.0" is a string; an unquoted 8.0 is a YAML float and means the same.
        _check(isinstance(value, str | int | float) and not isinstance(value, bool), key,
               f"must be a string, got {value!r}")
        return str(value)
    return value


def build(cls, block, where: str = ""):
    """The config dataclass `cls` built from a mapping; unknown keys and wrong types fail naming the key."""
    prefix = f"{where}." if where else ""
    _check(block is not None, where or "params", "is empty (null): remove the key for its defaults")
    _check(isinstance(block, dict), where or "params", f"must be a mapping, got {type(block).__name__}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(block) - set(names))
    _check(not unknown, f"{prefix}{unknown[0]}" if unknown else where,
           f"unknown key; known keys here: {', '.join(names)}")
    kwargs = {name: _coerce(block[name], hints[name], f"{prefix}{name}") for name in names if name in block}
    try:
        return cls(**kwargs)
    except ConfigError as e:  # __post_init__ names the key relative to the block; give the file's context
        raise ConfigError(str(e) if str(e).startswith(prefix) or not where else f"{prefix}{e}") from None


class _StrictLoader(yaml.SafeLoader):
    """safe_load, except that a key given twice in one mapping is an error (YAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load(path: str | Path = "params.yaml") -> Config:
    """params.yaml → Config. The only yaml load of the project's configuration."""
    try:
        raw = yaml.load((path := Path(path)).read_text(), Loader=_StrictLoader)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such params file") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if raw is None:  # an empty file would silently be every default
        raise ConfigError(f"{path}: the params file is empty")
    try:
        return build(Config, raw, "")
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
