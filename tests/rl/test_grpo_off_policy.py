"""`grpo.off_policy_ratio`: which "old" probability the decisions the policy did not draw (forced first steps,
the anchor's) take in the clipped ratio; on the stand-in costs of tests/rl/standin.py."""

import random

import pytest
import torch

from chronos.config import GRPOConfig
from chronos.rl.decode import split_obs
from chronos.rl.env import TransformEnv
from chronos.rl.grpo import (
    FIXED,
    POLICY,
    REFERENCE,
    behaviour_logp,
    collect_groups,
    decision_batch,
    drawn_by,
    grpo_loss,
    train_grpo,
)
from chronos.rl.policy import TransformPolicy
from tests.rl.standin import StandInBackend, kernels


def _setup(anchor: str = "greedy"):
    torch.manual_seed(0)
    policy, ref = TransformPolicy().eval(), TransformPolicy().eval()
    env = TransformEnv(kernels((2, 2, 2), (2, 2, 4)), StandInBackend())
    cfg = GRPOConfig(anchor=anchor)
    groups = collect_groups(env, policy, ref, list(env.names), cfg, 0.7, random.Random(0),
                            torch.Generator().manual_seed(0))
    return env, policy, ref, groups


def _drawn(groups, anchor: str) -> torch.Tensor:
    return torch.tensor([drawn_by(r, t, anchor) for g in groups for r in g for t in range(len(r.actions))])


def test_the_default_is_current_and_changes_nothing():
    assert GRPOConfig().off_policy_ratio == "current"
    env, policy, ref, groups = _setup()
    a = decision_batch(env, groups, policy, ref, True)
    b = decision_batch(env, groups, policy, ref, True, "current", "greedy", 0.7)
    assert torch.equal(a.old_logp, b.old_logp) and torch.equal(a.ref_logp_all, b.ref_logp_all)
    with torch.no_grad():  # the current policy's log-probs of every decision, forced or not
        want = torch.log_softmax(policy(*split_obs(a.obs)), -1).gather(1, a.actions[:, None]).squeeze(1)
    assert torch.equal(a.old_logp, want)


def test_behaviour_gives_fixed_decisions_probability_one():
    env, policy, ref, groups = _setup()
    cur = decision_batch(env, groups, policy, ref, True)
    beh = decision_batch(env, groups, policy, ref, True, "behaviour", "greedy", 0.7)
    drawn = _drawn(groups, "greedy")
    assert (drawn == FIXED).sum() >= 2 * 8 - 2 and (drawn == POLICY).any()  # forced, anchor and sampled
    assert torch.all(beh.old_logp[drawn == FIXED] == 0)  # ratio = pi_theta(a) / 1
    assert torch.equal(beh.old_logp[drawn == POLICY], cur.old_logp[drawn == POLICY])
    assert torch.equal(beh.actions, cur.actions) and torch.equal(beh.adv, cur.adv)
    # without the forced steps in the loss, only the anchor's decisions are fixed
    fewer = decision_batch(env, groups, policy, ref, False, "behaviour", "greedy", 0.7)
    assert len(fewer.actions) == len(beh.actions) - sum(r.mode == "forced" for g in groups for r in g)


def test_a_sampled_anchor_takes_the_references_probability_at_the_temperature():
    env, policy, ref, groups = _setup(anchor="sample")
    beh = decision_batch(env, groups, policy, ref, True, "behaviour", "sample", 0.7)
    drawn = _drawn(groups, "sample")
    assert (drawn == REFERENCE).any()
    with torch.no_grad():
        ref_t = torch.log_softmax(ref(*split_obs(beh.obs)) / 0.7, -1).gather(1, beh.actions[:, None])
    torch.testing.assert_close(beh.old_logp[drawn == REFERENCE], ref_t.squeeze(1)[drawn == REFERENCE])


def test_behaviour_logp_selects_per_decision():
    old = torch.tensor([-1.0, -2.0, -3.0])
    ref_logits = torch.tensor([[0.0, 1.0], [0.0, 1.0], [2.0, 0.0]])
    got = behaviour_logp(old, ref_logits, torch.tensor([1, 1, 0]), torch.tensor([POLICY, FIXED, REFERENCE]),
                         0.5)
    assert got[0] == -1.0 and got[1] == 0.0
    assert got[2].item() == pytest.approx(torch.log_softmax(torch.tensor([4.0, 0.0]), -1)[0].item())


def _one_decision_grad(adv: float):
    """Surrogate and its gradient for one fixed decision (old log-prob 0) of a small policy."""
    torch.manual_seed(1)
    policy = TransformPolicy().eval()
    obs = torch.rand(1, 67)
    obs[:, 25:46] = 1.0
    act = torch.tensor([3])
    policy.zero_grad()
    _, surr, _, _ = grpo_loss(policy, obs, act, torch.tensor([adv]), torch.zeros(1),
                              torch.zeros(1, 21), 0.2, 0.0)
    loss, *_ = grpo_loss(policy, obs, act, torch.tensor([adv]), torch.zeros(1), torch.zeros(1, 21), 0.2, 0.0)
    loss.backward()
    grads = [p.grad.clone() for p in policy.parameters()]
    policy.zero_grad()
    pi = torch.softmax(policy(*split_obs(obs)), -1)[0, 3]
    (-adv * pi).backward()  # the policy gradient of an enumerated action: A * grad pi(a)
    want = [p.grad.clone() for p in policy.parameters()]
    return surr.item(), pi.item(), grads, want


def test_a_fixed_decision_is_weighted_by_its_probability_and_pessimistically_clipped():
    surr, pi, grads, want = _one_decision_grad(+1.0)
    assert pi < 0.8 and surr == pytest.approx(-pi, rel=1e-5)  # ratio pi / 1, inside min(r A, clip(r) A)
    for g, w in zip(grads, want, strict=True):
        torch.testing.assert_close(g, w)
    # negative advantage: the ratio is already below 1 - eps, so PPO's min keeps the clipped constant and the
    # decision pushes nothing down (the push that lifted stop's logit under "current")
    surr, pi, grads, _ = _one_decision_grad(-1.0)
    assert surr == pytest.approx(0.8, rel=1e-5)
    assert all(g.abs().max() == 0 for g in grads)


def test_training_with_behaviour_still_learns_on_the_stand_in():
    torch.manual_seed(0)
    policy, ref = TransformPolicy(), TransformPolicy()
    ref.load_state_dict(policy.state_dict())
    env = TransformEnv(kernels((2, 2, 2), (2, 2, 4)), StandInBackend())
    cfg = GRPOConfig(epochs=25, lr=3e-3, seed=0, log_interval=0, off_policy_ratio="behaviour")
    _, _, hist = train_grpo(policy, ref, env, cfg, heldout_kernels=["gemm_tile(2,2,4)"], log=None)
    assert hist[-1]["train_mean_change"] <= -0.45  # vec_ld (x0.5 made-up cycles) is found


def test_the_training_record_names_the_knob_only_when_it_is_not_the_default():
    import dataclasses

    from chronos.stages.grpo import args_record

    assert "off_policy_ratio" not in args_record(GRPOConfig(), [])  # the committed records stay as they are
    assert args_record(GRPOConfig(off_policy_ratio="behaviour"), [])["off_policy_ratio"] == "behaviour"
    assert list(args_record(GRPOConfig(), [])) == [
        f.name for f in dataclasses.fields(GRPOConfig) if f.name not in ("off_policy_ratio", "log_interval")
    ] + ["train_kernels", "heldout_kernels", "log_interval"]
