"""The `timing:` block of params.yaml: how contenders are timed side by side (chronos.measure.timing) and how
their verdicts are drawn (chronos.measure.verdicts); also the blocks of the stages built on those verdicts
(search.headroom, search.census, heldout). Its own module only to keep config.py short; config.load builds
them like every other block.

Wall time is the objective of every multi-thread kernel. The seed's %clock64 cycles stay for its 1-thread
gemm_tile family only (MeasureConfig), so nothing here enters MeasureConfig's hash and the seed's store keys
do not move.
"""

from __future__ import annotations

import hashlib
import json
import typing
from dataclasses import asdict, dataclass, replace

from chronos.errors import ConfigError


def check(ok: bool, key: str, why: str) -> None:
    """A ConfigError naming the dotted key unless `ok` (every block of chronos.config checks with it)."""
    if not ok:
        raise ConfigError(f"{key}: {why}")


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


@dataclass(frozen=True)
class HeadroomConfig:
    """Stage headroom (#14): greedy in wall time over an action space on real kernels, per family the kernels
    that take the most GPU time first (a captured workload's profile; else the specs' order), under a
    device-time budget. A family is a folder under data/kernels with a specs.json."""

    families: tuple[str, ...] = ("captured/llama", "captured/gpt2", "captured/bert", "captured/flex",
                                 "triton_llm")
    space: str = "v2"
    per_family: int = 24
    budget_s: float = 300.0
    """(gpu) no new kernel starts after this many seconds; the rest waits for the next run."""
    peak_gb_s: float = 4800.0
    """DRAM bandwidth of the GPU the roofline fraction is taken against (H200: 4.8 TB/s)."""
    max_steps: int = 0
    """Greedy steps per kernel; 0: search.greedy.max_steps. 1: step 0 alone, a census of single actions."""
    l2_demote: bool = True
    """Time this section's comparisons with timing.l2_demote on, whatever `timing` says: the v2 space holds L2
    evict_last hints, whose lines partly outlive the flush (experiments/measurement/l2_demote.py,
    2026-12-02)."""
    SECTION: typing.ClassVar[str] = "search.headroom"

    def timing_for(self, timing: TimingConfig) -> TimingConfig:
        """The timing protocol of this section's comparisons (their key follows it)."""
        return replace(timing, l2_demote=True) if self.l2_demote else timing

    def __post_init__(self) -> None:
        s = self.SECTION
        check(self.space in ("seed", "v2"), f"{s}.space", f"must be seed or v2: {self.space!r}")
        check(self.per_family >= 1, f"{s}.per_family", f"must be >= 1, got {self.per_family}")
        check(self.peak_gb_s > 0, f"{s}.peak_gb_s", f"must be > 0, got {self.peak_gb_s}")
        check(self.max_steps >= 0, f"{s}.max_steps", f"must be >= 0, got {self.max_steps}")


@dataclass(frozen=True)
class CensusConfig(HeadroomConfig):
    """Stage census (#14): step 0 of headroom's search on many more kernels per family, i.e. every legal
    single action of the space beside the baseline in one side-by-side comparison: the measured outcomes
    the held-out evaluation (stage heldout) scores policies, fixed actions and the oracle with."""

    per_family: int = 24
    budget_s: float = 480.0
    max_steps: int = 1
    SECTION: typing.ClassVar[str] = "search.census"


@dataclass(frozen=True)
class RandomTimeConfig(HeadroomConfig):
    """Stage random_time (#14): seeded random search in wall time on the census's kernels, the comparator
    greedy needs: per kernel `sets` distinct random legal sequences of 1..max_steps v2 actions (seeded by
    `seed` and the kernel's name), all beside the baseline in one side-by-side comparison, and the fastest
    judged again beside the baseline alone."""

    sets: int = 16
    max_steps: int = 3
    seed: int = 0
    budget_s: float = 300.0
    SECTION: typing.ClassVar[str] = "search.random_time"

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.sets >= 1, f"{self.SECTION}.sets", f"must be >= 1, got {self.sets}")
        check(self.max_steps >= 1, f"{self.SECTION}.max_steps", f"must be >= 1, got {self.max_steps}")


@dataclass(frozen=True)
class HeldoutConfig:
    """Stage heldout (#14): leave-one-workload-out over the census's families. Per fold a v2 policy learns
    the one-step decision (which single action, or stop) from the other families' census: behaviour cloning
    of the measured best, then group-relative policy optimisation with the measured log(time ratio) as
    reward (replayed, nothing is estimated), and is scored on the held-out family beside the best fixed
    action and the oracle."""

    hidden: int = 64
    bc_epochs: int = 200
    bc_lr: float = 1e-3
    epochs: int = 1500
    """GRPO epochs (each: every training kernel, `group` sampled actions, one update)."""
    lr: float = 3e-4
    group: int = 8
    beta: float = 0.05
    """Weight of the KL term towards the BC policy (the reference)."""
    clip_eps: float = 0.2
    temperature: float = 1.0
    beam: int = 3
    """The optimize path's beam: the policy's k most likely actions, the best measured one kept."""
    fixed_beam: int = 3
    """0 (off) or k: also score `fixed_beam`, the k best legal actions of the training families' ranking,
    the best measured one kept: what a beam buys without learning. On, its picks join each kernel's
    side-by-side comparison, whose key then changes: a GPU run must time them before replay can."""
    seed: int = 0
    space: str = "v2"
    """The action space the fold's policy, fixed ranking and oracle choose from, with its observation: v2,
    or the seed's 20 actions (all measured in the v2 census) read through the seed's 25 features: the seed
    configuration on the same kernels (`dvc exp run -S heldout.space=seed`)."""

    select_bc_epochs: tuple[int, ...] = (50, 200)
    select_stops: tuple[int, ...] = (0, 150, 500, 1500)
    """Both non-empty: the policy is early-stopped, its BC epochs and GRPO stop epoch (0: BC alone; beyond
    `epochs`: the last) chosen from these by leave-one-family-out inside the training families
    (chronos.rl.onestep.select_by_inner_folds); GRPO still runs all `epochs` for the curves. Either empty:
    bc_epochs and epochs, as before."""

    def __post_init__(self) -> None:
        check(self.space in ("seed", "v2"), "heldout.space", f"must be seed or v2, got {self.space!r}")
        check(all(b >= 1 for b in self.select_bc_epochs), "heldout.select_bc_epochs", "each must be >= 1")
        check(all(s >= 0 for s in self.select_stops), "heldout.select_stops", "each must be >= 0")
        for k in ("hidden", "bc_epochs", "epochs", "group", "beam"):
            check(getattr(self, k) >= 1, f"heldout.{k}", f"must be >= 1, got {getattr(self, k)}")
        for k in ("bc_lr", "lr", "temperature"):
            check(getattr(self, k) > 0, f"heldout.{k}", f"must be > 0, got {getattr(self, k)}")
        check(self.beta >= 0, "heldout.beta", f"must be >= 0, got {self.beta}")
        check(self.fixed_beam >= 0, "heldout.fixed_beam", f"must be >= 0, got {self.fixed_beam}")
        check(0 < self.clip_eps < 1, "heldout.clip_eps", f"must be in (0, 1), got {self.clip_eps}")
