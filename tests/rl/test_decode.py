"""The one decoder module: observation layout, greedy and beam decoding over an explicit legality rule."""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from chronos.actions import ACTION_INDEX, ACTION_NAMES, NUM_ACTIONS, STOP, get_action_mask
from chronos.config import PredictConfig
from chronos.features.seed import extract_features
from chronos.optimize.inference import load_model, predict_transforms
from chronos.rl.decode import OBS_DIM, KernelSpace, beam_decode, greedy_decode, observation, split_obs
from chronos.rl.env import TransformEnv
from chronos.rl.grpo import greedy_eval
from chronos.rl.policy import TransformPolicy

from .standin import StandInBackend, kernels

ROOT = Path(__file__).resolve().parents[2]


def _space(shape=(2, 4, 2)):
    (_spec, root), = kernels(shape).values()
    return KernelSpace(root)


def test_observation_layout_and_split():
    space = _space()
    key = space.child((), "vec_ld")
    obs = space.obs(key)
    assert obs.shape == (OBS_DIM,) == (67,) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs, observation(extract_features(space.module(key)), space.mask(key), key))
    f, m, h = split_obs(torch.from_numpy(np.stack([obs, obs])))
    assert f.shape == (2, 25) and m.shape == h.shape == (2, NUM_ACTIONS)
    assert m[0].tolist() == space.mask(key).tolist() and h[0, ACTION_INDEX["vec_ld"]] == 1 and h[0].sum() == 1


def test_greedy_batched_equals_one_at_a_time_and_keeps_the_training_flag():
    torch.manual_seed(5)
    policy = TransformPolicy().train()
    spaces = [_space(s) for s in ((2, 2, 2), (2, 4, 2), (4, 2, 6))]
    batched = greedy_decode(spaces, policy, 6)
    assert batched == [greedy_decode([sp], policy, 6)[0] for sp in spaces]
    assert policy.training  # dropout was off for the decode only
    for sp, d in zip(spaces, batched, strict=True):
        assert len(d.sequence) <= 6 and set(d.sequence) == set(d.key)
    assert greedy_decode(spaces, policy, 0)[0].sequence == ()
    assert greedy_decode([], policy, 6) == []


class OnlyVecSt:
    """A legality rule of its own: vec_st at the start, then only stop; fixed features."""

    def mask(self, key):
        return np.asarray(get_action_mask(key, [] if key else ["vec_st"]), dtype=np.float32)

    def obs(self, key):
        return observation([0.5] * 25, self.mask(key), key)

    def child(self, key, action):
        return (*key, action)


def test_the_decoders_follow_the_space_they_are_given():
    for seed in range(5):
        torch.manual_seed(seed)
        policy = TransformPolicy()
        assert greedy_decode([OnlyVecSt()], policy, 6)[0].sequence in ((), ("vec_st",))
        assert {k for k, _ in beam_decode(OnlyVecSt(), policy, k=4, max_steps=6)} == {(), ("vec_st",)}


def _exhaustive(space, policy, max_steps):
    """Max over paths of the path log-probability, per final set (stop included before max_steps)."""
    best: dict[tuple, float] = {}

    def walk(key, score, step):
        obs = torch.from_numpy(space.obs(key))[None]
        nf, na = policy.n_features, policy.n_actions
        with torch.no_grad():
            row = torch.log_softmax(policy(obs[:, :nf], obs[:, nf:nf + na], obs[:, nf + na:]), -1)[0].numpy()
        final = score + (float(row[STOP]) if step < max_steps else 0.0)
        best[key] = max(best.get(key, -math.inf), final)
        if step == max_steps:
            return
        for a in np.flatnonzero(space.mask(key)):
            if a != STOP and (child := space.child(key, ACTION_NAMES[a])) is not None:
                walk(child, score + float(row[a]), step + 1)

    walk((), 0.0, 0)
    return sorted(best.items(), key=lambda t: -t[1])


@pytest.mark.parametrize("seed", [0, 1])
def test_beam_equals_brute_force_top_k(seed):
    torch.manual_seed(seed)
    policy = TransformPolicy().eval()
    space = _space()
    exact = _exhaustive(space, policy, 2)
    got = beam_decode(space, policy, k=6, max_steps=2, width=10_000)
    assert [k for k, _ in got] == [k for k, _ in exact[:6]]
    assert np.allclose([s for _, s in got], [s for _, s in exact[:6]], atol=1e-5)


def test_beam_sets_are_distinct_canonical_and_best_first():
    torch.manual_seed(3)
    got = beam_decode(_space(), TransformPolicy().eval(), k=8, max_steps=4)
    sets = [k for k, _ in got]
    assert len(got) == 8 and len(set(sets)) == 8
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(got))
    assert all(s <= 0 for _, s in got)


@pytest.fixture(scope="module")
def committed():
    """The committed policy's predictions on the 64 gemm_tile kernels, through inference on each PTX file."""
    from chronos.kernels.spec import load_module, load_specs

    specs_json = ROOT / "data/kernels/gemm_tile/specs.json"
    specs = load_specs(specs_json)
    model = load_model(ROOT / "models/checkpoint_best.pt")
    max_steps = PredictConfig().max_steps
    predicted = {s.kernel: predict_transforms(model, (specs_json.parent / s.ptx).read_text(), max_steps)
                 for s in specs}
    env = TransformEnv({s.kernel: (s, load_module(specs_json, s)) for s in specs}, StandInBackend())
    return model, specs, predicted, env, max_steps


def test_inference_and_the_env_decode_the_committed_policy_alike(committed):
    """Inference on a raw PTX and GRPO's greedy evaluation on the env's spaces are one decoder."""
    model, specs, predicted, env, max_steps = committed
    assert len(specs) == 64
    rollouts = greedy_eval(env, model, [s.kernel for s in specs], max_steps)
    assert {r.kernel: r.sequence for r in rollouts} == predicted


def test_committed_predictions_are_reproduced(committed):
    """reports/predictions.json (stage predict, i.e. predict_transforms) is reproduced exactly."""
    _model, specs, predicted, _env, max_steps = committed
    report = json.loads((ROOT / "reports/predictions.json").read_text())
    assert report["checkpoint"] == "models/checkpoint_best.pt" and report["max_steps"] == max_steps
    by_stem = {Path(s.ptx).stem: predicted[s.kernel] for s in specs}
    assert {r["kernel"]: r["predicted"] for r in report["kernels"]} == by_stem
