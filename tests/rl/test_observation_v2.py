"""Observation v2 in the RL layer: the v2 space observes chronos.features.v2 (with the launch when the caller
has one), the seed space chronos.features.seed exactly; the policy's input follows; v2 checkpoints record the
observation and refuse other features."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chronos.actions import SEED, V2
from chronos.errors import CheckpointError, ChronosError
from chronos.features.seed import extract_features
from chronos.features.v2 import FEATURE_V2_NAMES, kernel_features_v2
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import parse
from chronos.rl.checkpoint import content_hash, load_model, save_checkpoint
from chronos.rl.decode import KernelSpace, greedy_decode, obs_dim, split_obs
from chronos.rl.env import TransformEnv
from chronos.rl.policy import TransformPolicy

from .standin import StandInBackend, kernels


def test_the_policy_input_follows_the_space():
    v2, seed = TransformPolicy(hidden=8, action_space=V2), TransformPolicy(hidden=8)
    assert v2.n_features == 52 and v2.feature_names == FEATURE_V2_NAMES and v2.net[0].in_features == 146
    assert seed.n_features == 25 and seed.net[0].in_features == 67 == obs_dim(SEED)
    assert obs_dim(V2) == 146
    with pytest.raises(ValueError, match="v2 space observes 52 features"):
        TransformPolicy(n_features=25, action_space=V2)


def test_kernel_space_observations_per_space():
    (spec, module), = kernels((2, 2, 2)).values()
    seed = KernelSpace(module).obs(())
    assert seed.shape == (67,) and np.array_equal(seed[:25], np.float32(extract_features(module)))
    calls = []

    def info(m):
        calls.append(m)
        return {"registers": 40, "spills": 0}

    space = KernelSpace(module, action_space=V2, launch=spec, ptxas_info=info)
    obs = space.obs(())
    assert obs.shape == (146,) and len(calls) == 1
    assert np.array_equal(obs[:52], kernel_features_v2(module, spec, {"registers": 40, "spills": 0}))
    assert np.array_equal(obs[52:99], space.mask(()))
    f, m, h = split_obs(torch.from_numpy(np.stack([obs])))
    assert (f.shape[1], m.shape[1], h.shape[1]) == (52, 47, 47)
    with pytest.raises(ChronosError, match="width 119 is no action space's"):
        split_obs(torch.zeros(1, 119))


def test_a_v2_env_observes_its_kernels_launch():
    env = TransformEnv(kernels((2, 2, 2)), StandInBackend(), action_space="v2")
    obs, _ = env.reset(options={"kernel": "gemm_tile(2,2,2)"})
    f = dict(zip(FEATURE_V2_NAMES, obs[:52].tolist(), strict=True))
    assert obs.shape == (146,) and f["has_launch"] == 1.0 and f["has_cta_size"] == 1.0


def test_a_v2_checkpoint_records_its_observation_and_refuses_other_features(tmp_path):
    policy = TransformPolicy(hidden=8, action_space=V2)
    p = tmp_path / "v2.pt"
    save_checkpoint(p, policy, {"epoch": 1})
    raw = torch.load(p, weights_only=True)
    assert raw["action_space"]["observation"] == {"version": "v2", "features": list(FEATURE_V2_NAMES)}
    assert raw["sha256"] == content_hash(raw["format"], 8, raw["policy"], {"epoch": 1}, raw["action_space"])
    assert load_model(p, action_space="v2").feature_names == FEATURE_V2_NAMES

    def rewrite(name: str, observation) -> str:
        rec = {"name": "v2", "names": list(V2.names)}
        if observation is not None:
            rec["observation"] = observation
        state = raw["policy"]
        out = tmp_path / name
        torch.save({"format": raw["format"], "hidden": 8, "policy": state, "metadata": {},
                    "action_space": rec, "sha256": content_hash(raw["format"], 8, state, {}, rec)}, out)
        return str(out)

    with pytest.raises(CheckpointError, match="records no observation.*retrain"):
        load_model(rewrite("old.pt", None))
    swapped = list(FEATURE_V2_NAMES)
    swapped[30], swapped[31] = swapped[31], swapped[30]
    with pytest.raises(CheckpointError, match="first differ at feature 30"):
        load_model(rewrite("swapped.pt", {"version": "v2", "features": swapped}))
    with pytest.raises(CheckpointError, match="with 25 features.*first differ at feature 25"):
        load_model(rewrite("short.pt", {"version": "v2", "features": list(FEATURE_V2_NAMES[:25])}))


def test_a_seed_checkpoint_is_written_and_hashed_as_before(tmp_path):
    p = tmp_path / "seed.pt"
    save_checkpoint(p, TransformPolicy(hidden=8), {"epoch": 1})
    raw = torch.load(p, weights_only=True)
    assert "action_space" not in raw and set(raw) == {"format", "hidden", "policy", "metadata", "sha256"}
    assert raw["sha256"] == content_hash(raw["format"], 8, raw["policy"], {"epoch": 1})
    model = load_model(p, action_space="seed")
    assert model.n_features == 25
    decoded = greedy_decode([KernelSpace(parse(gemm_tile_ptx(2, 2, 2)))], model, 2)[0]  # a bare PTX, seed
    assert all(a in SEED.index for a in decoded.sequence)
