"""The searches: greedy, random, the atlas and the Triton tiers (`search:`), confirmations (`confirm:`), and
the wall-time searches over real kernels (`search.headroom`, `search.census`, `search.random_time`)."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, replace

from chronos.config.checks import check
from chronos.config.checks import check as _check
from chronos.config.learning import EnvConfig
from chronos.config.measure import TimingConfig, parse_tolerance
from chronos.config.workloads import FAMILIES, PENDING_FAMILIES, check_families


@dataclass(frozen=True)
class HeadroomConfig:
    """Stage headroom (#14): greedy in wall time over an action space on real kernels, per family the kernels
    that take the most GPU time first (a captured workload's profile; else the specs' order), under a
    device-time budget. A family is a folder under data/kernels with a specs.json."""

    families: tuple[str, ...] = (*FAMILIES, "triton_llm")
    """Folders under data/kernels; a `captured/<w>` one must name a registered workload (config.workloads)."""
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
        check_families(self.families, f"{s}.families")


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


SELECT = ("profile", "measured_time", "profile+measured_time")
"""How a stage picks a family's kernels: `profile`, the capture's profile (one launch signature per entry,
the most profiled GPU time first; captures before #28 have no per-kernel times, so capture order),
`measured_time`, each distinct kernel by its launches times its stock time as chronos tune measured it, or
both: the profile's, then the heaviest by measured time it left out."""
ONCE_PER = ("entry", "ptx")
"""With `profile`, one kernel per entry name or per distinct stock PTX (chronos.search.headroom.selected)."""


@dataclass(frozen=True)
class KnobCensusConfig:
    """Stage knob_census (#28): per captured kernel every single compile-knob value beside stock (action space
    v3, chronos.search.knob_census), the kernels census would choose (the most GPU time first)."""

    families: tuple[str, ...] = (*FAMILIES, *PENDING_FAMILIES)
    """Captured workloads only (registered or pending: config.workloads.PENDING, item 7's two): their
    kernels' TTIR is what the knob variants are compiled from."""
    per_family: int = 32
    select: str = "profile+measured_time"
    """Which kernels (SELECT, chronos.search.headroom.selected): `profile` (the captures' profiles hold no
    per-kernel times: capture order, one kernel per entry name), `measured_time` (launches x tune's stock
    time) or `profile+measured_time` (the first, then the `per_family` heaviest it left out: the kernels
    that carry the step's time join the ones measured before)."""
    once_per: str = "ptx"
    """With `profile`: one kernel per entry name (`entry`), or that and then each name's other stock PTX
    (`ptx`: a name compiled for several shapes, e.g. one decode template per batch size, counts each, after
    every name's first; ONCE_PER)."""
    budget_s: float = 480.0
    """(gpu) no new kernel starts after this many seconds."""
    l2_demote: bool = True
    """As search.census: the stock kernels' PTX can hold L2 evict_last hints."""
    anchor_tolerance: str = "rtol=0.02,atol=0.001"
    """(stage knob_anchors) Inductor's tuners reorder reductions: their configs are timed within this
    (measure.tolerance's form); every row still says whether it kept stock's bits."""
    walk_steps: int = 4
    """(stage knob_walk) moves per walk at most, each one comparison (#28 item 4's local search)."""
    SECTION: typing.ClassVar[str] = "search.knob_census"

    def timing_for(self, timing: TimingConfig) -> TimingConfig:
        return replace(timing, l2_demote=True) if self.l2_demote else timing

    def __post_init__(self) -> None:
        s = self.SECTION
        check(self.per_family >= 1, f"{s}.per_family", f"must be >= 1, got {self.per_family}")
        check(self.walk_steps >= 0, f"{s}.walk_steps", f"must be >= 0, got {self.walk_steps}")
        check(self.select in SELECT, f"{s}.select", f"must be {' or '.join(SELECT)}, got {self.select!r}")
        check(self.once_per in ONCE_PER, f"{s}.once_per",
              f"must be {' or '.join(ONCE_PER)}, got {self.once_per!r}")
        try:
            parse_tolerance(self.anchor_tolerance)
        except ValueError as e:
            check(False, f"{s}.anchor_tolerance", str(e))
        check(all(f.startswith("captured/") for f in self.families), f"{s}.families",
              f"only captured workloads have knob variants: {list(self.families)}")
        check_families(self.families, f"{s}.families", pending=True)


@dataclass(frozen=True)
class SearchConfig:
    greedy: GreedySearchConfig = field(default_factory=GreedySearchConfig)
    random: RandomSearchConfig = field(default_factory=RandomSearchConfig)
    atlas: AtlasSearchConfig = field(default_factory=AtlasSearchConfig)
    triton: TritonSearchConfig = field(default_factory=TritonSearchConfig)
    headroom: HeadroomConfig = field(default_factory=HeadroomConfig)
    census: CensusConfig = field(default_factory=CensusConfig)
    random_time: RandomTimeConfig = field(default_factory=RandomTimeConfig)
    knob_census: KnobCensusConfig = field(default_factory=KnobCensusConfig)


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
