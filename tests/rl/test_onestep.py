"""The one-step learner (chronos.rl.onestep): rewards and deploy gains from census candidates, BC of the
measured best, GRPO that raises the sampled reward, and choices that never leave the measured actions."""

from __future__ import annotations

import math

import numpy as np
import torch

from chronos.actions import STOP, V2
from chronos.config import HeldoutConfig
from chronos.features.v2 import observed_features
from chronos.rl.onestep import best_action, choose, decision, deployed_gain, train_bc, train_grpo
from chronos.rl.policy import TransformPolicy

NF = len(observed_features(V2))
A, B, C = "l2_evict_first_streaming", "maxnreg_128", "l1_evict_last_reread"


def _kernel(i: int, a_wins: bool):
    """A kernel whose feature 0 says which of A or B is faster; C is slower everywhere; B's twin fails."""
    f = np.zeros(NF, np.float32)
    f[0], f[1] = (1.0 if a_wins else 0.0), (i % 5) / 5
    cands = [{"action": A, "valid": True, "ratio": 0.9 if a_wins else 1.0, "verdict": "faster" if a_wins
              else "no_difference"},
             {"action": B, "valid": True, "ratio": 1.0 if a_wins else 0.92, "verdict": "no_difference"
              if a_wins else "faster"},
             {"action": C, "valid": True, "ratio": 1.1, "verdict": "slower"},
             {"action": "maxnreg_32", "valid": False, "reason": "wrong_output"}]
    return decision(f"k{i}", "fam", f, cands, V2)


def test_rewards_are_signed_log_ratios_and_gains_deploy_only_faster_verdicts():
    d = _kernel(0, True)
    assert d.reward[V2.index[A]] == -math.log(0.9) and d.gain[V2.index[A]] == -math.log(0.9)
    assert d.reward[V2.index[C]] == -math.log(1.1) < 0 and d.gain[V2.index[C]] == 0.0
    assert np.isnan(d.reward[V2.index["maxnreg_32"]])  # invalid: masked, never chosen
    assert d.reward[STOP] == 0.0 and best_action(d) == V2.index[A]
    slower = [{"action": C, "valid": True, "ratio": 1.1, "verdict": "slower"}]
    loser = decision("x", "f", np.zeros(NF), slower, V2)
    assert best_action(loser) == STOP
    # nothing faster, several legal actions at deploy gain 0: stop, not the lowest-index one among them
    flat = [{"action": a, "valid": True, "ratio": r, "verdict": "no_difference"}
            for a, r in ((B, 0.99), (A, 1.0), (C, 0.995))]
    tie = decision("t", "f", np.zeros(NF), flat, V2)
    assert {tie.gain[V2.index[a]] for a in (A, B, C)} == {0.0} and best_action(tie) == STOP
    assert deployed_gain(d, [V2.index[C], V2.index[A]]) == -math.log(0.9)  # beam: the best measured deploys


def test_bc_then_grpo_generalise_the_feature_that_decides_and_stay_on_measured_actions():
    train = [_kernel(i, i % 2 == 0) for i in range(20)]
    test = [_kernel(100 + i, i % 2 == 0) for i in range(6)]
    cfg = HeldoutConfig(bc_epochs=150, epochs=60, hidden=32)
    policy = train_bc(train, cfg, V2)
    picks = choose(policy, test)
    assert [V2.names[p[0]] for p in picks] == [A if i % 2 == 0 else B for i in range(6)]
    top3 = choose(policy, test, 3)
    legal = {V2.index[A], V2.index[B], V2.index[C], STOP}
    assert all(len(p) == 3 and set(p) <= legal for p in top3)  # never the invalid or unmeasured actions
    policy, curves = train_grpo(policy, train, cfg, lambda p: {"probe": 1.0})
    assert len(curves) == 60 and curves[-1]["probe"] == 1.0 and curves[0]["kl"] == 0.0
    assert np.mean([c["reward"] for c in curves[-10:]]) >= np.mean([c["reward"] for c in curves[:10]]) - 1e-3
    assert [V2.names[p[0]] for p in choose(policy, test)] == [A if i % 2 == 0 else B for i in range(6)]


def test_grpo_from_a_uniform_start_learns_to_prefer_the_rewarded_action():
    train = [_kernel(i, True) for i in range(8)]
    cfg = HeldoutConfig(bc_epochs=1, bc_lr=1e-9, epochs=300, lr=3e-3, beta=0.0, hidden=16)
    policy = train_bc(train, cfg, V2)  # one vanishing step: as initialised
    _, curves = train_grpo(policy, train, cfg)
    assert curves[0]["reward"] < 0.05 and np.mean([c["reward"] for c in curves[-20:]]) > 0.09


def test_bc_learns_only_from_kernels_where_an_action_was_faster():
    flat = [{"action": a, "valid": True, "ratio": 1.0, "verdict": "no_difference"} for a in (A, B, C)]
    nothing = [decision(f"n{i}", "f", np.full(NF, float(i)), flat, V2) for i in range(6)]
    cfg = HeldoutConfig(bc_epochs=150, hidden=32)
    untouched = train_bc(nothing, cfg, V2)  # no demonstration at all: the policy as initialised
    torch.manual_seed(cfg.seed)
    fresh = TransformPolicy(hidden=32, dropout=0.0, action_space=V2)
    assert all(torch.equal(a, b) for a, b in zip(untouched.state_dict().values(), fresh.state_dict().values(),
                                                 strict=True))
    # winners mixed with kernels where nothing won: BC never learns stop from the latter
    policy = train_bc([_kernel(i, i % 2 == 0) for i in range(20)] + nothing, cfg, V2)
    assert all(p[0] != STOP for p in choose(policy, nothing + [_kernel(50, True)]))


def test_early_stopping_keeps_the_policy_of_the_stop_epoch_and_inner_folds_pick_from_the_grid():
    from dataclasses import replace

    from chronos.rl.onestep import select_by_inner_folds, train_stopped

    train = [_kernel(i, i % 2 == 0) for i in range(12)]
    cfg = HeldoutConfig(bc_epochs=20, epochs=6, hidden=16, select_bc_epochs=(5, 20), select_stops=(0, 3, 6))
    bc = train_bc(train, cfg, V2)
    stopped, curves = train_stopped(train, cfg, V2, 0)
    assert len(curves) == 6  # GRPO ran every epoch for the curves; the BC policy is what stop 0 returns
    assert all(torch.equal(a, b) for a, b in zip(bc.state_dict().values(), stopped.state_dict().values(),
                                                 strict=True))
    full, _ = train_stopped(train, cfg, V2, 6)
    assert not all(torch.equal(a, b) for a, b in zip(bc.state_dict().values(), full.state_dict().values(),
                                                     strict=True))
    one_family = select_by_inner_folds(train, cfg, V2)
    assert one_family == ((20, 6), {})  # a single family: nothing to hold out inside, the configured setting
    two = [replace(d, family="f1" if i < 6 else "f2") for i, d in enumerate(train)]
    chosen, inner = select_by_inner_folds(two, cfg, V2)
    assert set(inner) == {(b, s) for b in (5, 20) for s in (0, 3, 6)}
    assert inner[chosen] == max(inner.values()) and all(v >= 0 for v in inner.values())
