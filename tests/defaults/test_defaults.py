"""chronos.defaults: the policy and params.yaml shipped inside the package are the repository's, byte for
byte (retraining or editing params.yaml without copying them into src/chronos/defaults/ fails here), they
load the way every caller loads them, and a non-editable install carries them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from chronos.defaults import params_path, policy_path

ROOT = Path(__file__).resolve().parents[2]


def _repo_file(rel: str) -> Path:
    path = ROOT / rel
    if not path.is_file():  # an installed package's tests, away from the repository
        pytest.skip(f"{rel}: no repository here")
    return path


@pytest.mark.parametrize(("packaged", "repo"), [(policy_path, "models/checkpoint_best.pt"),
                                                (params_path, "params.yaml")])
def test_the_packaged_defaults_are_the_repositorys_files(packaged, repo):
    shipped = packaged()
    assert shipped.is_absolute() and shipped.is_file()
    assert shipped.read_bytes() == _repo_file(repo).read_bytes(), (
        f"{shipped} differs from {repo}: copy it again (cp {repo} src/chronos/defaults/{shipped.name})")


def test_the_packaged_defaults_load_as_tune_loads_them():
    from chronos.config import load
    from chronos.rl.checkpoint import load_model

    cfg = load(params_path())
    policy = load_model(policy_path(), require_hash=True, action_space=cfg.actions)  # weights_only load
    assert policy.content_hash and not policy.training


def test_a_non_editable_install_ships_them():
    pyproject = tomllib.loads(_repo_file("pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["chronos.defaults"]
    assert sorted(shipped) == sorted([policy_path().name, params_path().name])
