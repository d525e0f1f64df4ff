"""Action space v2 in the RL layer: the policy's head follows the space, the mask excludes illegal actions,
checkpoints record their space and refuse another, and the committed (seed) checkpoints load and decode as
before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from chronos.actions import LOOP_UNROLLS, SEED, STOP, V2
from chronos.errors import CheckpointError, ChronosError
from chronos.features.v2 import FEATURE_V2_NAMES, NUM_FEATURES_V2
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.optimize.inference import predict_transforms
from chronos.ptx import parse
from chronos.rl.checkpoint import content_hash, load_model, save_checkpoint
from chronos.rl.decode import KernelSpace, greedy_decode, obs_dim
from chronos.rl.env import TransformEnv
from chronos.rl.policy import TransformPolicy
from chronos.transforms import legal_actions

from .standin import StandInBackend, kernels

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "tests/corpus/triton/triton_softmax.sm_90a.ptx"


def test_a_v2_policy_has_the_v2_head():
    p = TransformPolicy(hidden=32, action_space="v2")
    assert p.action_space is V2 and p.n_actions == 47
    assert p.net[0].in_features == NUM_FEATURES_V2 + 2 * 47 == obs_dim(V2) == 146
    assert p.net[6].out_features == 47
    assert TransformPolicy().action_space is SEED and TransformPolicy().net[6].out_features == 21
    with pytest.raises(ValueError, match="v2 space has 47"):
        TransformPolicy(n_actions=21, action_space="v2")


def test_the_v2_mask_is_the_legality_oracle_and_the_policy_never_picks_outside_it():
    module = parse(SOFTMAX.read_text())
    space = KernelSpace(module, action_space="v2")
    mask = space.mask(())
    legal = set(legal_actions(module, space=V2, defer_ptxas=True))
    assert mask.shape == (47,) and mask[STOP] == 1
    assert {a for a, m in zip(V2.names, mask, strict=True) if m and a != "stop"} == legal
    assert not any(mask[V2.index[a]] for a in (*LOOP_UNROLLS, "occ_ctas_1", "maxnreg_uncapped"))
    obs = space.obs(())
    assert obs.shape == (146,) and np.array_equal(obs[NUM_FEATURES_V2:NUM_FEATURES_V2 + 47], mask)
    torch.manual_seed(0)
    policy = TransformPolicy(hidden=16, action_space=V2)
    with torch.no_grad():
        policy.net[6].bias.copy_(torch.linspace(5, 0, 47))  # every masked action ranks above the legal ones
        policy.net[6].bias[V2.index["loop_unroll_2"]] = 100.0
    logits = policy(torch.from_numpy(obs[:NUM_FEATURES_V2]), torch.from_numpy(mask),
                    torch.from_numpy(obs[NUM_FEATURES_V2 + 47:]))
    assert all(logits[i] == torch.finfo(torch.float32).min for i in np.flatnonzero(mask == 0))
    seq = greedy_decode([space], policy, 6)[0].sequence
    assert seq and all(a in V2.index for a in seq) and not set(seq) & set(LOOP_UNROLLS)


def test_a_v2_env_steps_through_v2_actions():
    env = TransformEnv(kernels((2, 2, 2)), StandInBackend(), action_space="v2")
    obs, info = env.reset(options={"kernel": "gemm_tile(2,2,2)"})
    assert env.action_space.n == 47 and obs.shape == (146,) and info["action_mask"].shape == (47,)
    a = next(i for i in range(21, 47) if info["action_mask"][i])
    obs, _, _, _, info = env.step(a)
    assert info["applied"] == (V2.names[a],) and obs[NUM_FEATURES_V2 + 47 + a] == 1


def test_a_checkpoint_records_its_space_and_refuses_another(tmp_path):
    v2, seed = TransformPolicy(hidden=8, action_space="v2"), TransformPolicy(hidden=8)
    p2, p1 = tmp_path / "v2.pt", tmp_path / "seed.pt"
    save_checkpoint(p2, v2, {"epoch": 1})
    save_checkpoint(p1, seed, {"epoch": 1})
    raw2, raw1 = torch.load(p2, weights_only=True), torch.load(p1, weights_only=True)
    assert raw2["action_space"] == {"name": "v2", "names": list(V2.names),
                                    "observation": {"version": "v2", "features": list(FEATURE_V2_NAMES)}}
    assert "action_space" not in raw1  # seed files are written exactly as before v2
    assert raw1["sha256"] == content_hash(raw1["format"], 8, raw1["policy"], {"epoch": 1})
    assert load_model(p2).action_space is V2 and load_model(p2, action_space="v2").action_space is V2
    with pytest.raises(CheckpointError, match=r"trained in the v2 action space \(47 actions\) and cannot be "
                                              r"loaded into the seed space \(21\).*actions: v2"):
        load_model(p2, action_space="seed")
    with pytest.raises(CheckpointError, match=r"trained in the seed action space \(21 actions\) and cannot "
                                              r"be loaded into the v2 space \(47\)"):
        load_model(p1, action_space=V2)
    with pytest.raises(ChronosError, match="a policy of the seed action space cannot decode in the v2"):
        greedy_decode([KernelSpace(parse(gemm_tile_ptx(2, 2, 2)), action_space="v2")], load_model(p1), 2)


def test_a_checkpoint_whose_names_are_not_this_chronoss_v2_is_refused(tmp_path):
    p = tmp_path / "old_v2.pt"
    policy = TransformPolicy(hidden=8, action_space="v2")
    state = {k: v.clone() for k, v in policy.state_dict().items()}
    names = list(V2.names)
    names[45], names[46] = names[46], names[45]  # a build whose loop slots came in the other order
    rec = {"name": "v2", "names": names}
    torch.save({"format": "chronos-policy-v2", "hidden": 8, "policy": state, "metadata": {},
                "action_space": rec, "sha256": content_hash("chronos-policy-v2", 8, state, {}, rec)}, p)
    with pytest.raises(CheckpointError, match="first differ at logit 45"):
        load_model(p)


@pytest.mark.parametrize("name", ["bc.pt", "checkpoint_best.pt", "checkpoint_latest.pt"])
def test_committed_checkpoints_are_seed_space_and_keep_their_hash(name):
    path = ROOT / "models" / name
    raw = torch.load(path, weights_only=True)
    model = load_model(path, action_space="seed", require_hash=True)
    assert model.action_space is SEED and "action_space" not in raw
    assert model.content_hash == raw["sha256"]  # the seed hash is computed as it always was
    with pytest.raises(CheckpointError, match="cannot be loaded into the v2 space"):
        load_model(path, action_space="v2")


def test_the_committed_checkpoints_predictions_are_unchanged():
    """A few kernels of reports/predictions.json, predicted through an explicitly seed-space load."""
    report = json.loads((ROOT / "reports/predictions.json").read_text())
    model = load_model(ROOT / report["checkpoint"], action_space="seed")
    for row in report["kernels"][::16]:
        m, n, k = (int(x) for x in row["kernel"].split("_")[-3:])
        assert predict_transforms(model, gemm_tile_ptx(m, n, k), report["max_steps"]) == row["predicted"]
