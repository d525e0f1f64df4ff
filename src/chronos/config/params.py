"""params.yaml, whole: `Config` and `load(path)`, the only place params.yaml is parsed."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from chronos.config.checks import check as _check
from chronos.config.checks import check_heldout
from chronos.config.corpus import KernelsConfig, SplitConfig
from chronos.config.learning import BCConfig, GRPOConfig, HeldoutConfig, PredictConfig
from chronos.config.measure import MeasureConfig, TimingConfig
from chronos.config.search import ConfirmConfig, SearchConfig
from chronos.errors import ConfigError


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
