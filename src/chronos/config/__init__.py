"""Every knob of the pipeline, typed: one frozen dataclass per params.yaml block, each default written once,
in modules by meaning: the corpus (`corpus`), learning (`learning`), measurement (`measure`), the searches
(`search`), the real workloads (`workloads`), params.yaml whole and its loader (`params`), and the checks a
type cannot express (`checks`).

`load(path)` is the only place params.yaml is parsed. It rejects unknown keys and wrong types with a
`ConfigError` naming the dotted key, so a typo never falls back to a default silently. Library code takes
these dataclasses (or plain arguments), never the file. `dvc exp run -S key=value` edits params.yaml, so
experiments go through the same checks. Every block is importable from `chronos.config` itself.
"""

from chronos.config.checks import MAX_TILE, check, check_gemm_tile, check_heldout
from chronos.config.corpus import GemmTileConfig, KernelsConfig, SplitConfig
from chronos.config.learning import (
    TEMPERATURE_SCHEDULES,
    BCConfig,
    EnvConfig,
    GRPOConfig,
    HeldoutConfig,
    PredictConfig,
)
from chronos.config.measure import MeasureConfig, TimingConfig
from chronos.config.params import Config, build, load
from chronos.config.search import (
    AtlasSearchConfig,
    CensusConfig,
    ConfirmConfig,
    GreedySearchConfig,
    HeadroomConfig,
    RandomSearchConfig,
    RandomTimeConfig,
    SearchConfig,
    TritonSearchConfig,
)

__all__ = [
    "MAX_TILE",
    "TEMPERATURE_SCHEDULES",
    "AtlasSearchConfig",
    "BCConfig",
    "CensusConfig",
    "Config",
    "ConfirmConfig",
    "EnvConfig",
    "GRPOConfig",
    "GemmTileConfig",
    "GreedySearchConfig",
    "HeadroomConfig",
    "HeldoutConfig",
    "KernelsConfig",
    "MeasureConfig",
    "PredictConfig",
    "RandomSearchConfig",
    "RandomTimeConfig",
    "SearchConfig",
    "SplitConfig",
    "TimingConfig",
    "TritonSearchConfig",
    "build",
    "check",
    "check_gemm_tile",
    "check_heldout",
    "load",
]
