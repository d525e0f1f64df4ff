"""How a variant is measured: the seed's cycle protocol (`measure:`, whose hash keys the store) and the
side-by-side wall-time protocol of every multi-thread kernel (`timing:`).

Wall time is the objective of every multi-thread kernel. The seed's %clock64 cycles stay for its 1-thread
gemm_tile family only (MeasureConfig), so nothing in TimingConfig enters MeasureConfig's hash and the seed's
store keys do not move."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from chronos.config.checks import check
from chronos.config.checks import check as _check

# Keys that change what is measured go into MeasureConfig.config_hash(); operational keys (how many workers,
# where the watchdog fires, how many ptxas processes) do not, so changing them never invalidates the store.
_OPERATIONAL = frozenset({"watchdog_s", "compile_workers", "gpus", "backend", "startup_timeout_s",
                          "one_gpu_per_kernel"})


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
        tolerance: "strict" (outputs must equal the baseline's bit for bit) or "rtol=R,atol=A": a variant
            whose outputs differ is accepted when every element is within atol + rtol * |baseline| (NaN and
            inf matched), marked as not bit-exact, with its ULP distance (chronos.measure.numerics).
            Hashed only when not strict: strict measurements keep their keys.
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
    tolerance: str = "strict"

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
        try:
            self.tolerance_values()
        except ValueError as e:
            _check(False, "measure.tolerance", str(e))

    def tolerance_values(self) -> tuple[float, float] | None:
        """(rtol, atol) of the tolerance mode, None when strict (raises ValueError for a malformed one)."""
        return parse_tolerance(self.tolerance)

    def measured(self) -> dict:
        """The knobs that define the measurement (hashed); a strict tolerance is left out, so the keys of
        every measurement made before the tolerance mode existed stay as they were."""
        return {k: v for k, v in asdict(self).items()
                if k not in _OPERATIONAL and not (k == "tolerance" and v == "strict")}

    def config_hash(self) -> str:
        """Stable 16-hex-digit hash of the measured knobs (sorted-key JSON, so field order never matters)."""
        blob = json.dumps(self.measured(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return asdict(self)




def parse_tolerance(text: str) -> tuple[float, float] | None:
    """ "strict" -> None; "rtol=1e-5,atol=1e-8" (either part may be left out: 0) -> (rtol, atol)."""
    if text == "strict":
        return None
    values = {"rtol": 0.0, "atol": 0.0}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or name not in values:
            raise ValueError(f"must be strict or rtol=R,atol=A, got {text!r}")
        try:
            values[name] = float(value)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
        if not values[name] >= 0 or values[name] == float("inf"):
            raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    if values["rtol"] == values["atol"] == 0:
        raise ValueError("rtol=0,atol=0 accepts only equal values: say strict")
    return values["rtol"], values["atol"]


_ADAPTIVE = ("max_rounds", "rounds_step", "target_halfwidth")


@dataclass(frozen=True)
class TimingConfig:
    """Side-by-side timing of one decision's contenders (a greedy step, an optimize call, an A/A test).

    Attributes:
        rounds: interleaved rounds; each visits every contender once, in a seeded shuffled order, on one
            allocation. Verdicts bootstrap over rounds, so they need enough of them.
        reps: single-launch event samples per contender per round (their median is the round's value).
        l2: cold (L2 flushed before each timed launch, inside the graph too) | warm (back to back).
        l2_demote: (cold only) before each flush, demote the kernel's buffers' L2 lines to normal eviction
            priority (chronos.measure.l2), so lines kept by an L2 evict_last hint do not outlive the flush.
        spin_us: a %globaltimer spin kernel this long runs before every start event, so the host's
            enqueueing of start, launch and end is hidden behind it: host delays never enter an interval.
        graph_launches: launches per CUDA graph for the per-launch (graph) time of short kernels.
        graph_reps: graph samples per contender per round.
        graph_below_us: kernels whose baseline single-launch median is below this are judged on the graph's
            per-launch time (a sub-µs body is otherwise buried under ~2-4 µs of launch overhead, which is the
            same for every contender and dilutes every ratio towards 1); longer ones on single launches.
        confidence: two-sided level of the bootstrap interval of a contender's time ratio to its baseline.
        resamples: bootstrap resamples (seeded: a verdict replays identically from the stored samples).
        max_rounds: 0 (off) or the adaptive protocol's cap: after `rounds`, batches of `rounds_step` more
            rounds run while some contender's interval against the baseline is wider than
            `target_halfwidth` (half its log-width), up to this many rounds in all.
    """

    rounds: int = 15
    reps: int = 5
    l2: str = "cold"
    l2_demote: bool = False
    spin_us: float = 30.0
    graph_launches: int = 20
    graph_reps: int = 2
    graph_below_us: float = 20.0
    confidence: float = 0.99
    resamples: int = 4000
    max_rounds: int = 60
    rounds_step: int = 5
    target_halfwidth: float = 0.004

    def __post_init__(self) -> None:
        check(self.rounds >= 5, "timing.rounds",
               f"must be >= 5 (the bootstrap resamples rounds), got {self.rounds}")
        check(self.reps >= 1, "timing.reps", f"must be >= 1, got {self.reps}")
        check(self.l2 in ("cold", "warm"), "timing.l2", f"must be cold or warm, got {self.l2!r}")
        check(not self.l2_demote or self.l2 == "cold", "timing.l2_demote", "needs timing.l2: cold")
        check(self.spin_us >= 0, "timing.spin_us", f"must be >= 0, got {self.spin_us}")
        check(self.graph_launches >= 1, "timing.graph_launches", f"must be >= 1, got {self.graph_launches}")
        check(self.graph_reps >= 1, "timing.graph_reps", f"must be >= 1, got {self.graph_reps}")
        check(0.5 < self.confidence < 1, "timing.confidence", f"must be in (0.5, 1), got {self.confidence}")
        check(self.resamples >= 200, "timing.resamples", f"must be >= 200, got {self.resamples}")
        check(self.max_rounds == 0 or self.max_rounds >= self.rounds, "timing.max_rounds",
               f"must be 0 (off) or >= timing.rounds, got {self.max_rounds}")
        check(self.rounds_step >= 1 and self.target_halfwidth > 0, "timing.rounds_step",
               "rounds_step must be >= 1 and target_halfwidth > 0")

    def timing_hash(self, measure_hash: str) -> str:
        """Keys stored comparisons: these knobs and the measure block's hash (draws, seed, flush, arch)."""
        knobs = asdict(self)
        if not self.max_rounds:  # added later: off, the adaptive knobs stay out, so older keys still hold
            for k in _ADAPTIVE:
                knobs.pop(k)
        if not self.l2_demote:  # added later, likewise
            knobs.pop("l2_demote")
        blob = json.dumps({"timing": knobs, "measure": measure_hash}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        return asdict(self)
