"""One list of workloads (chronos.config.workloads): the capture workflow, the workload definitions,
params.yaml and the config defaults all read it, and a name outside it fails naming the registry."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chronos.config import CensusConfig, HeadroomConfig, RandomTimeConfig, load
from chronos.config.workloads import FAMILIES, NAMES, workload
from chronos.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_the_workload_definitions_are_the_registrys():
    spec = importlib.util.spec_from_file_location("workloads_script", ROOT / "scripts/workloads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines, builds nothing: models are built when a workload runs
    assert tuple(module.WORKLOADS) == NAMES == ("llama", "gpt2", "bert", "flex")


@pytest.mark.parametrize("section", ["headroom", "census", "random_time"])
def test_params_and_the_config_defaults_search_every_registered_workload(section):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())["search"][section]["families"]
    captured = tuple(f for f in raw if f.startswith("captured/"))
    assert captured == FAMILIES
    assert tuple(getattr(load(ROOT / "params.yaml").search, section).families) == tuple(raw)
    for cls in (HeadroomConfig, CensusConfig, RandomTimeConfig):
        assert cls().families[:len(FAMILIES)] == FAMILIES


def test_an_unregistered_workload_fails_naming_the_key_and_the_registry(tmp_path):
    with pytest.raises(ConfigError, match=r"search.census.families: 'captured/lama' is not a registered"):
        CensusConfig(families=("captured/lama", "triton_llm"))
    with pytest.raises(ConfigError, match="unknown workload 'lama'; registered: llama, gpt2, bert, flex"):
        workload("lama")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["search"]["headroom"]["families"] = ["captured/gtp2"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match="search.headroom.families: 'captured/gtp2'"):
        load(tmp_path / "params.yaml")


def test_the_capture_workflow_targets_the_registry_and_refuses_other_names():
    base = [sys.executable, "-m", "snakemake", "-s", "workflow/captured/Snakefile", "--cores", "1", "-n",
            "--nolock"]
    dry = subprocess.run(base, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert dry.returncode == 0, dry.stderr[-2000:]
    for name in NAMES:
        assert f"data/kernels/captured/{name}/e2e.json" in dry.stdout
    bad = subprocess.run([*base, "--config", "workloads=[lama]"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=False)
    assert bad.returncode != 0 and "unknown workload 'lama'" in bad.stdout + bad.stderr


def test_pending_workloads_may_be_named_by_the_knob_stages_only():
    from chronos.config.search import KnobCensusConfig
    from chronos.config.workloads import PENDING, PENDING_FAMILIES

    assert PENDING_FAMILIES == ("captured/flex_decode_long", "captured/attorch_lm")
    assert not set(PENDING_FAMILIES) & set(FAMILIES)
    assert KnobCensusConfig(families=("captured/flex", *PENDING_FAMILIES)).families[1:] == PENDING_FAMILIES
    with pytest.raises(ConfigError, match=r"census.families: 'captured/attorch_lm' is not a registered"):
        CensusConfig(families=("captured/attorch_lm",))
    with pytest.raises(ConfigError, match=r"'captured/atorch_lm' is not a registered or pending .*pending:"):
        KnobCensusConfig(families=("captured/atorch_lm",))
    assert workload("attorch_lm") is PENDING[1] and workload("flex_decode_long").phases == ("decode",)


def test_knob_census_once_per_names_its_choices():
    from chronos.config.search import KnobCensusConfig

    assert KnobCensusConfig(once_per="ptx").once_per == "ptx"
    with pytest.raises(ConfigError, match=r"search.knob_census.once_per.*entry or ptx"):
        KnobCensusConfig(once_per="shape")
