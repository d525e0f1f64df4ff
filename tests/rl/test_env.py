"""TransformEnv's Gymnasium contract over the made-up stand-in costs (tests/rl/standin.py)."""

import math

import numpy as np
import pytest

from chronos.actions import ACTION_INDEX, STOP
from chronos.config import EnvConfig
from chronos.errors import TrainingError
from chronos.rl.env import OBS_DIM, TransformEnv
from chronos.search.space import realize
from tests.rl.standin import StandInBackend, kernels

K = "gemm_tile(2,2,2)"


@pytest.fixture(scope="module")
def env():
    return TransformEnv(kernels(), StandInBackend())


def test_reset_gives_obs_and_mask(env):
    obs, info = env.reset(seed=0, options={"kernel": K})
    assert obs.shape == (OBS_DIM,) == (67,) and obs.dtype == np.float32
    mask = info["action_mask"]
    assert mask.shape == (21,) and mask[STOP] == 1 and mask[ACTION_INDEX["vec_ld"]] == 1
    np.testing.assert_array_equal(mask, env.action_masks())
    np.testing.assert_array_equal(obs[25:46], mask)
    assert not obs[46:].any()  # empty history
    assert env.action_space.n == 21 and env.observation_space.shape == (67,)
    assert env.observation_space.contains(obs)


def test_step_updates_features_mask_history_and_stop_terminates(env):
    obs0, _ = env.reset(options={"kernel": K})
    obs, reward, term, trunc, info = env.step(ACTION_INDEX["vec_ld"])
    assert reward == 0.0 and not term and not trunc
    assert obs[46 + ACTION_INDEX["vec_ld"]] == 1 and info["action_mask"][ACTION_INDEX["vec_ld"]] == 0
    assert not np.array_equal(obs[:25], obs0[:25])  # features of the transformed kernel
    obs, reward, term, trunc, info = env.step(STOP)
    assert term and not trunc
    assert reward == pytest.approx(math.log(1 / 0.5))  # made-up cost: vec_ld halves the cycles
    assert info["final_cycles"] == pytest.approx(500.0) and info["valid"]


def test_masked_action_is_refused(env):
    env.reset(options={"kernel": K})
    env.step(ACTION_INDEX["cache_cs"])
    with pytest.raises(ValueError, match="masked out"):
        env.step(ACTION_INDEX["cache_cg"])  # same conflict group


def test_truncates_after_six_transforms_with_terminal_reward():
    env = TransformEnv(kernels(), StandInBackend())
    env.reset(options={"kernel": K})
    seq = ["vec_ld", "vec_st", "cache_cs", "st_cache_cs", "prefetch_L2", "maxnreg_128"]
    for i, a in enumerate(seq):
        _, reward, term, trunc, _ = env.step(ACTION_INDEX[a])
        assert not term
        assert trunc == (i == 5)
        if i < 5:
            assert reward == 0.0
    assert reward == pytest.approx(-math.log(0.5 * 0.9 * 1.05))
    # any order of the same set is the same variant
    assert env.space(K).module(env.key).applied == realize(env.kernels[K][1], seq).applied


def test_invalid_final_variant_gets_penalty_and_reason():
    env = TransformEnv(kernels(), StandInBackend(), EnvConfig(invalid_penalty=-2.5))
    env.reset(options={"kernel": K})
    env.step(ACTION_INDEX["reorder_sl"])
    _, reward, term, _, info = env.step(STOP)
    assert term and reward == -2.5 and info["invalid_reason"] == "wrong_output" and not info["valid"]


def test_step_cost_and_measurement_cache():
    backend = StandInBackend()
    env = TransformEnv(kernels(), backend, EnvConfig(step_cost=0.01))
    for _ in range(2):
        env.reset(options={"kernel": K})
        env.step(ACTION_INDEX["vec_st"])
        _, reward, *_ = env.step(STOP)
        assert reward == pytest.approx(-math.log(0.9) - 0.01)
    assert backend.measured.count(("vec_st",)) == 1  # measured once per run, then cached


def test_reset_rejects_unknown_kernel(env):
    with pytest.raises(KeyError):
        env.reset(options={"kernel": "nope"})


@pytest.mark.filterwarnings("ignore:.*infinity:UserWarning")  # features are unbounded counts by design
def test_passes_gymnasium_checks():
    """gymnasium's own checkers; not check_env as a whole, which steps with unmasked random actions (a
    masked action is refused here, as maskable-policy libraries expect)."""
    import gymnasium
    from gymnasium.utils import env_checker, passive_env_checker

    env = TransformEnv(kernels((2, 2, 2), (2, 4, 2)), StandInBackend())
    assert isinstance(env, gymnasium.Env)
    assert isinstance(env.action_space, gymnasium.spaces.Discrete)
    assert isinstance(env.observation_space, gymnasium.spaces.Box)
    env_checker.check_space_limit(env.observation_space, "observation")
    env_checker.check_reset_return_type(env)
    env_checker.check_reset_seed_determinism(env)
    env_checker.check_reset_options(env)
    passive_env_checker.env_reset_passive_checker(env, seed=0)
    passive_env_checker.env_step_passive_checker(env, ACTION_INDEX["vec_ld"])
    passive_env_checker.env_step_passive_checker(env, STOP)


def test_seeded_reset_picks_the_same_kernel():
    env = TransformEnv(kernels((2, 2, 2), (2, 4, 2), (4, 2, 2)), StandInBackend())
    picks = [env.reset(seed=s)[1]["kernel"] for s in range(6)]
    assert picks == [env.reset(seed=s)[1]["kernel"] for s in range(6)]


def test_no_kernels_or_invalid_baseline_are_training_errors():
    with pytest.raises(TrainingError, match="at least one kernel"):
        TransformEnv({}, StandInBackend())

    class Broken(StandInBackend):
        def measure(self, spec, variants, *, baseline_ptx=None):
            return [dataclasses.replace(r, valid=False, reason="wrong_output")
                    for r in super().measure(spec, variants, baseline_ptx=baseline_ptx)]

    import dataclasses

    with pytest.raises(TrainingError, match="baseline itself is invalid"):
        TransformEnv(kernels(), Broken()).baseline(K)
