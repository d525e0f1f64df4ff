"""chronos.config: params.yaml loads whole and typed; a typo or a wrong type is a one-line error naming
the key."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from chronos import config
from chronos.config import TimingConfig, load
from chronos.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _keys(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _keys(v, f"{prefix}{k}.")
    else:
        yield prefix.rstrip(".")


def test_params_yaml_loads_and_every_key_is_known():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg = config.load(ROOT / "params.yaml")
    for key in _keys(raw):  # each key of the file lands in the typed config, with the file's value
        value = cfg
        for part in key.split("."):
            value = getattr(value, part)
        expected = raw
        for part in key.split("."):
            expected = expected[part]
        assert (list(value) if isinstance(value, tuple) else value) == expected, key


def _leaves(obj, prefix=""):
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _leaves(getattr(obj, f.name), f"{prefix}{f.name}.")
    else:
        yield prefix.rstrip("."), obj


def test_code_defaults_equal_params_yaml():
    """Every default written once, and the same as the shipped params.yaml (a stage run without a key in
    params.yaml behaves as the pipeline does)."""
    shipped = dict(_leaves(config.load(ROOT / "params.yaml")))
    differ = [key for key, default in _leaves(config.Config()) if shipped[key] != default]
    assert differ == ["split.heldout_kernels"]  # the held-out split is data, not a default


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "params.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, key", [
    ("grpo:\n  lrr: 0.1\n", "grpo.lrr"),
    ("search:\n  greedy:\n    min_gian: 0.1\n", "search.greedy.min_gian"),
    ("predict:\n  beem: 4\n", "predict.beem"),
    ("confirm:\n  topp: 4\n", "confirm.topp"),
    ("measure:\n  repz: 3\n", "measure.repz"),
    ("nonsense:\n  a: 1\n", "nonsense"),
])
def test_misspelt_key_is_rejected_naming_it(tmp_path, text, key):
    with pytest.raises(ConfigError, match=rf"{tmp_path / 'params.yaml'}: {key}: unknown key"):
        config.load(_write(tmp_path, text))


@pytest.mark.parametrize("text, key", [  # the bad-input audit's params files
    ("kernels:\n  gemm_tile:\n    m: 2\n", "kernels.gemm_tile.m"),
    ("bc:\n  epochs: ten\n", "bc.epochs"),
    ("bc:\n  epochs: -5\n", "bc.epochs"),
    ("bc:\n  batch_size: 0\n", "bc.batch_size"),
    ("kernels:\n  gemm_tile:\n    target: 90\n", "kernels.gemm_tile.target"),
    ("grpo:\n  max_steps: -1\n", "grpo.max_steps"),
    ("search:\n  greedy:\n    families: gemm_tile\n", "search.greedy.families"),
    ("grpo:\n  forced_step_in_loss: 1\n", "grpo.forced_step_in_loss"),
    ("grpo:\n  temperature_schedule: zigzag\n", "grpo.temperature_schedule"),
    ("grpo:\n  off_policy_ratio: old\n", "grpo.off_policy_ratio"),
    ("grpo:\n  anchor: best\n", "grpo.anchor"),
    ("measure:\n  backend: cuda\n", "measure.backend"),
    ("measure: [1, 2]\n", "measure"),
])
def test_wrong_type_or_value_is_rejected_naming_the_key(tmp_path, text, key):
    with pytest.raises(ConfigError) as e:
        config.load(_write(tmp_path, text))
    assert f": {key}: " in str(e.value) and "\n" not in str(e.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="no such params file"):
        config.load(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.load(_write(tmp_path, "grpo: [\n"))
    with pytest.raises(ConfigError, match="the params file is empty"):
        config.load(_write(tmp_path, ""))
    with pytest.raises(ConfigError, match="bc: is empty"):
        config.load(_write(tmp_path, "bc:\n"))


@pytest.mark.parametrize(("text", "says"), [
    ("kernels:\n  gemm_tile:\n    m: [1000000000]\n", "kernels.gemm_tile.m: must be a non-empty list"),
    ("kernels:\n  gemm_tile:\n    target: sm_9000\n", "kernels.gemm_tile.target: not an sm_XX target"),
    ("kernels:\n  gemm_tile:\n    ptx_version: banana\n", "kernels.gemm_tile.ptx_version: not a PTX ISA"),
    ("split:\n  heldout_kernels: ['gemm_tile(2,2,6)', 'gemm-tile(2,4,4)']\n", "split.heldout_kernels"),
])
def test_values_no_kernel_can_have_are_refused_naming_the_key(tmp_path, text, says):
    """A typo used to run out of memory, write kernels ptxas rejects, or train with no held-out set."""
    with pytest.raises(ConfigError, match=re.escape(says)):
        config.load(_write(tmp_path, text))


def test_ints_are_accepted_for_floats_and_lists_become_tuples(tmp_path):
    cfg = config.load(_write(tmp_path, "grpo:\n  lr: 1\nkernels:\n  gemm_tile:\n    m: [2]\n"))
    assert cfg.grpo.lr == 1.0 and isinstance(cfg.grpo.lr, float)
    assert cfg.kernels.gemm_tile.m == (2,)


def test_measure_config_hash_is_unchanged_by_operational_keys():
    base = config.MeasureConfig()
    assert config.MeasureConfig(backend="replay", gpus=4, watchdog_s=5).config_hash() == base.config_hash()
    assert config.MeasureConfig(reps=7).config_hash() != base.config_hash()


def test_a_key_given_twice_is_rejected_not_silently_overridden(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("timing:\n  rounds: 15\ntiming:\n  rounds: 30\n")
    with pytest.raises(ConfigError, match="duplicate key 'timing'"):
        load(p)
    p.write_text("timing:\n  rounds: 15\n  rounds: 30\n")
    with pytest.raises(ConfigError, match="duplicate key 'rounds'"):
        load(p)


def test_timing_block_is_checked():
    with pytest.raises(ConfigError, match="timing.l2"):
        TimingConfig(l2="lukewarm")
    with pytest.raises(ConfigError, match="timing.rounds"):
        TimingConfig(rounds=2)


def test_the_heldout_space_is_seed_or_v2():
    from chronos.config import HeldoutConfig

    assert load(ROOT / "params.yaml").heldout.space == "v2"
    assert HeldoutConfig(space="seed").space == "seed"
    with pytest.raises(ConfigError, match="heldout.space: must be seed or v2"):
        HeldoutConfig(space="v3")


def test_the_action_space_knob_defaults_to_seed_and_is_validated(tmp_path):
    from chronos.actions import SPACES

    assert load(ROOT / "params.yaml").actions == config.Config().actions == "seed"
    assert config.build(config.Config, {"actions": "v2"}).actions == "v2"
    for name in SPACES:  # config lists the names itself (it sits below chronos.actions): they must agree
        assert config.build(config.Config, {"actions": name}).actions == name
    p = tmp_path / "params.yaml"
    p.write_text("actions: v3\n")
    with pytest.raises(ConfigError, match=r"actions: must be one of \('seed', 'v2'\), got 'v3'"):
        load(p)
