"""Snakefile and dvc.yaml must declare the same stages: same commands, deps, outs and params.

The Snakemake side is read through Snakemake's own API (the rules as Snakemake compiles them, not a
re-parse of the .smk text); rule params must be `tracked=tracked_params("dotted.key", ...)`, whose keys
are what dvc.yaml lists under `params:`.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TARGET_RULE = "all"


def _norm_cmd(cmd) -> str:
    if isinstance(cmd, list):
        cmd = " && ".join(cmd)
    return " ".join(str(cmd).split())


def _dvc_params(entries) -> list[str]:
    """dvc.yaml `params:` -> sorted keys; keys from a file other than params.yaml become 'file:key'."""
    keys = []
    for e in entries or []:
        if isinstance(e, str):
            keys.append(e)
        else:
            for file, sub in e.items():
                keys += [k if file == "params.yaml" else f"{file}:{k}" for k in sub]
    return sorted(keys)


def _paths(entries) -> list[str]:
    """deps/outs entries (plain paths or {path: options}) -> sorted normalised paths."""
    out = []
    for e in entries or []:
        out += [e] if isinstance(e, str) else list(e)
    return sorted(os.path.normpath(p) for p in out)


_ITEM = re.compile(r"\$\{item\.(\w+)\}")
_WILDCARD = re.compile(r"\{wildcards\.(\w+)\}")
_CONSTRAINED = re.compile(r"\{(\w+),[^}]*\}")  # Snakemake writes wildcard_constraints into the pattern


def _template(text: str) -> str:
    """A DVC matrix template (`${item.m}`) in Snakemake's wildcard spelling (`{m}`)."""
    return _ITEM.sub(r"{\1}", text)


def dvc_stages(dvc_yaml: Path) -> dict[str, dict]:
    """Stages as written; a matrix stage is one templated stage, its ${item.x} spelled {x} like a wildcard."""
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    return {
        # metrics and plots files are outputs too (DVC lists them apart so `dvc exp show`/`dvc plots` find
        # them)
        name: {"cmd": _template(_norm_cmd(s["cmd"])), "deps": [_template(p) for p in _paths(s.get("deps"))],
               "outs": sorted(_template(p) for p in
                              _paths(s.get("outs")) + _paths(s.get("metrics")) + _paths(s.get("plots"))),
               "params": _dvc_params(s.get("params"))}
        for name, s in stages.items()
    }


def dvc_outputs(root: Path) -> list[str]:
    """Every output path, matrix stages expanded over their params (what `dvc repro` writes)."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((root / "params.yaml").read_text())
    out = []
    for s in stages.values():
        paths = _paths(s.get("outs")) + _paths(s.get("metrics")) + _paths(s.get("plots"))
        matrix = s.get("matrix")
        if not matrix:
            out += paths
            continue
        axes = {k: _lookup(params, v) for k, v in matrix.items()}
        for values in itertools.product(*axes.values()):
            item = dict(zip(axes, values, strict=True))
            out += [_ITEM.sub(lambda m, item=item: str(item[m.group(1)]), p) for p in paths]
    return sorted(out)


def _lookup(params: dict, ref):
    if isinstance(ref, list):
        return ref
    value = params
    for part in ref.strip("${}").split("."):
        value = value[part]
    return value


def snakemake_workflow(root: Path):
    """(stage rules, target rule's inputs) of the Snakefile in `root`, compiled by Snakemake."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ResourceSettings

    cwd, path = os.getcwd(), os.environ.get("PATH", "")
    try:
        with SnakemakeApi() as api:
            wf = api.workflow(resource_settings=ResourceSettings(), snakefile=root / "Snakefile",
                              workdir=root)._workflow
            rules = {r.name: r for r in wf.rules}
            target = sorted(os.path.normpath(str(f)) for f in rules.pop(TARGET_RULE).input)
            stages = {
                name: {"cmd": _WILDCARD.sub(r"{\1}", _norm_cmd(r.shellcmd or "")),
                       "deps": sorted(os.path.normpath(str(f)) for f in r.input),
                       "outs": sorted(_CONSTRAINED.sub(r"{\1}", os.path.normpath(str(f))) for f in r.output),
                       "params": sorted(dict(r.params.items()).get("tracked", {}))}
                for name, r in rules.items()
            }
    finally:
        os.chdir(cwd)
        os.environ["PATH"] = path  # the Snakefile prepends the venv's bin to PATH
    return stages, target


def _collapse(deps: list[str], dirs: list[str]) -> list[str]:
    """Snakemake lists a merge rule's inputs file by file; DVC names their folder: compare folders."""
    out = set()
    for d in deps:
        under = next((x for x in dirs if d.startswith(x + os.sep)), None)
        out.add(under or d)
    return sorted(out)


def differences(dvc: dict[str, dict], smk: dict[str, dict]) -> list[str]:
    smk = {n: {**r, "deps": _collapse(r["deps"], dvc.get(n, {}).get("deps", []))} for n, r in smk.items()}
    diffs = [f"stage {n!r} only in dvc.yaml" for n in sorted(dvc.keys() - smk.keys())]
    diffs += [f"rule {n!r} only in the Snakefile" for n in sorted(smk.keys() - dvc.keys())]
    for name in sorted(dvc.keys() & smk.keys()):
        for field in ("cmd", "deps", "outs", "params"):
            if dvc[name][field] != smk[name][field]:
                diffs.append(f"{name}.{field}: dvc.yaml {dvc[name][field]!r} "
                             f"!= Snakefile {smk[name][field]!r}")
    return diffs


@pytest.fixture(scope="module")
def real():
    return dvc_stages(ROOT / "dvc.yaml"), *snakemake_workflow(ROOT)


def test_snakefile_and_dvc_agree(real):
    dvc, smk, _ = real
    assert differences(dvc, smk) == []
    assert {"kernels", "baseline", "greedy", "bc", "predict"} <= dvc.keys()


def test_target_rule_builds_every_dvc_output(real):
    assert real[2] == dvc_outputs(ROOT)


def test_stage_commands_only_call_stage_modules(real):
    for name, s in real[0].items():
        assert s["cmd"].startswith(f"python -m chronos.stages.{name} --params params.yaml"), name


def test_differences_catches_doctored_dvc(real):
    dvc, smk, _ = real
    doctored = {n: dict(s) for n, s in dvc.items()}
    doctored["predict"]["cmd"] += " --max-steps 3"
    doctored["kernels"]["deps"] = doctored["kernels"]["deps"][1:]
    doctored["bc"]["params"] = ["bc", "bc.seed"]
    doctored["extra"] = {"cmd": "true", "deps": [], "outs": [], "params": []}
    diffs = differences(doctored, smk)
    assert len(diffs) == 4, diffs
    assert any(d.startswith("predict.cmd") for d in diffs)


def test_doctored_snakemake_rule_is_caught(real, tmp_path):
    dvc = real[0]
    shutil.copy(ROOT / "Snakefile", tmp_path)
    shutil.copy(ROOT / "params.yaml", tmp_path)
    shutil.copytree(ROOT / "workflow", tmp_path / "workflow")
    smk_file = tmp_path / "workflow" / "rules" / "policy.smk"
    text = smk_file.read_text()
    assert "--stats reports/bc_stats.json\"" in text
    smk_file.write_text(text.replace("--stats reports/bc_stats.json\"",
                                     "--stats reports/bc_stats.json --fast\"", 1))
    smk, _ = snakemake_workflow(tmp_path)
    assert [d.split(":")[0] for d in differences(dvc, smk)] == ["bc.cmd"]


def test_dvc_params_normalisation():
    assert _dvc_params(["a.b", {"params.yaml": ["c"]}, {"other.yaml": ["d"]}]) == ["a.b", "c", "other.yaml:d"]
    assert _paths(["x/y", {"data/k": {"cache": False}}]) == ["data/k", "x/y"]
