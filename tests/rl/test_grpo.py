"""DA-GRPO on the made-up stand-in costs (tests/rl/standin.py): vec_ld is clearly the best action there."""

import dataclasses

import numpy as np
import pytest
import torch

from chronos.actions import STOP
from chronos.config import EnvConfig, GRPOConfig
from chronos.errors import TrainingError
from chronos.optimize.inference import load_model, save_checkpoint
from chronos.rl.env import TransformEnv
from chronos.rl.grpo import advantages, greedy_eval, grpo_loss, make_group, temperature, train_grpo
from chronos.rl.policy import TransformPolicy
from tests.rl.standin import StandInBackend, kernels

K = "gemm_tile(2,2,2)"


def test_group_is_one_anchor_and_distinct_forced_first_actions():
    import random

    env = TransformEnv(kernels(), StandInBackend())
    g = make_group(env, K, 8, random.Random(0))
    assert len(g) == 8 and g[0].mode == "anchor" and all(r.mode == "forced" for r in g[1:])
    forced = [r.forced for r in g[1:]]
    assert len(set(forced)) == 7 and STOP not in forced
    assert all(env.space(K).mask(())[a] == 1 for a in forced)
    small = make_group(env, K, 30, random.Random(0))  # more rollouts than legal first transforms
    n_legal = int(env.space(K).mask(())[:STOP].sum())
    assert sum(r.mode == "forced" for r in small) == n_legal
    assert sum(r.mode == "sample" for r in small) == 29 - n_legal


def test_advantages_are_median_centred_then_z_normalised():
    groups = [[1.0, 2.0, 3.0, 10.0], [0.0, 0.0, 1.0]]
    centred = np.array([-1.5, -0.5, 0.5, 7.5, 0.0, 0.0, 1.0])
    want = (centred - centred.mean()) / centred.std()
    got = np.concatenate(advantages(groups))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert abs(got.mean()) < 1e-9 and got.std() == pytest.approx(1.0)


def test_loss_clips_the_ratio_and_penalises_kl():
    torch.manual_seed(0)
    policy, ref = TransformPolicy().eval(), TransformPolicy().eval()
    obs = torch.rand(5, 67)
    obs[:, 25:46] = 1.0
    acts = torch.tensor([0, 1, 2, 3, STOP])
    adv = torch.ones(5)
    logp = torch.log_softmax(policy(obs[:, :25], obs[:, 25:46], obs[:, 46:]), -1)
    ref_logp = torch.log_softmax(ref(obs[:, :25], obs[:, 25:46], obs[:, 46:]), -1).detach()
    old = logp.gather(1, acts[:, None]).squeeze(1).detach()
    # ratio 1: surrogate = -mean(adv); KL > 0 against a different reference, 0 against itself
    loss, surr, kl, clip = grpo_loss(policy, obs, acts, adv, old, ref_logp, 0.2, 0.5)
    assert surr.item() == pytest.approx(-1.0) and kl.item() > 0 and clip.item() == 0
    assert loss.item() == pytest.approx(-1.0 + 0.5 * kl.item(), rel=1e-5)
    _, _, kl0, _ = grpo_loss(policy, obs, acts, adv, old, logp.detach(), 0.2, 0.5)
    assert kl0.item() == pytest.approx(0.0, abs=1e-6)
    # old log-probs far below the current ones: ratio > 1 + eps with positive advantage is clipped (no grad)
    policy.zero_grad()
    loss, surr, _, clip = grpo_loss(policy, obs, acts, adv, old - 1.0, ref_logp, 0.2, 0.0)
    loss.backward()
    assert clip.item() == 1.0 and surr.item() == pytest.approx(-1.2)
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in policy.parameters())


def test_temperature_schedules():
    a = GRPOConfig(epochs=11, temperature_start=2.0, temperature_end=0.5)
    for kind in ("linear", "cosine", "exponential"):
        a = dataclasses.replace(a, temperature_schedule=kind)
        assert temperature(a, 1) == pytest.approx(2.0) and temperature(a, 11) == pytest.approx(0.5)
    assert temperature(dataclasses.replace(a, temperature_schedule="constant"), 11) == 2.0


def test_training_improves_on_stand_in_and_checkpoints_load(tmp_path):
    torch.manual_seed(0)
    policy = TransformPolicy()
    ref = TransformPolicy()
    ref.load_state_dict(policy.state_dict())
    env = TransformEnv(kernels((2, 2, 2), (2, 2, 4)), StandInBackend())
    cfg = GRPOConfig(epochs=25, lr=3e-3, seed=0, log_interval=0)
    best, latest, hist = train_grpo(policy, ref, env, cfg, heldout_kernels=["gemm_tile(2,2,4)"], log=None)
    assert [h["epoch"] for h in hist] == list(range(26))
    assert all(torch.equal(x, y) for x, y in zip(latest.values(), policy.state_dict().values(), strict=True))
    first, last = hist[1]["mean_reward"], np.mean([h["mean_reward"] for h in hist[-5:]])
    assert last > first + 0.1
    assert hist[-1]["train_mean_change"] <= -0.45  # vec_ld (x0.5 made-up cycles) is found
    assert hist[0]["train_distinct"] == 1 and hist[-1]["heldout_mean_change"] is not None
    b = hist[-1]["best_epoch"]
    assert hist[b]["train_mean_change"] == min(h["train_mean_change"] for h in hist)
    policy.load_state_dict(best)
    save_checkpoint(tmp_path / "best.pt", policy, {"stage": "test", "best_epoch": b})
    loaded = load_model(tmp_path / "best.pt")
    assert loaded.metadata["best_epoch"] == b
    for x, y in zip(loaded.state_dict().values(), best.values(), strict=True):
        assert torch.equal(x, y)


def test_bc_and_grpo_stages_end_to_end(tmp_path, monkeypatch):
    """Both stages on two kernels, with the stand-in backend in place of gpu/replay."""
    import json
    import shutil
    from pathlib import Path

    import chronos.measure.backend as mb
    from chronos.kernels.spec import load_specs, write_specs
    from chronos.stages import bc as bc_stage
    from chronos.stages import grpo as grpo_stage
    from tests.rl.test_bc import synthetic_demos

    src = Path("data/kernels/gemm_tile/specs.json")
    specs = [s for s in load_specs(src) if s.kernel in ("gemm_tile(2,2,2)", "gemm_tile(2,2,4)")]
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    write_specs(kdir / "specs.json", specs)
    for s in specs:
        shutil.copy(src.parent / s.ptx, kdir / s.ptx)
    demos = synthetic_demos(n_kernels=2, per_kernel=10)
    for d in demos:
        d["kernel"] = "gemm_tile(2,2,2)" if d["kernel"] == "k0" else "gemm_tile(2,2,4)"
    (tmp_path / "demos.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    (tmp_path / "params.yaml").write_text(
        "split:\n  heldout_kernels: ['gemm_tile(2,2,4)']\nbc:\n  epochs: 3\n"
        "grpo:\n  epochs: 3\n  log_interval: 1\n")
    monkeypatch.setattr(mb, "make_backend", lambda *a, **k: StandInBackend())
    t = tmp_path
    assert bc_stage.main(["--params", str(t / "params.yaml"), "--demos", str(t / "demos.jsonl"),
                          "--out", str(t / "bc.pt"), "--stats", str(t / "bc_stats.json")]) == 0
    stats = json.loads((t / "bc_stats.json").read_text())
    assert stats["heldout_kernels"] == ["gemm_tile(2,2,4)"] and len(stats["history"]) == 3
    assert grpo_stage.main([
        "--params", str(t / "params.yaml"), "--kernels", str(kdir), "--store", str(t / "s"),
        "--bc", str(t / "bc.pt"), "--out-best", str(t / "best.pt"), "--out-latest", str(t / "latest.pt"),
        "--result", str(t / "res.json"), "--curves", str(t / "curves.csv")]) == 0
    res = json.loads((t / "res.json").read_text())
    assert {r["kernel"]: r["split"] for r in res["kernels"]} == {"gemm_tile(2,2,2)": "train",
                                                                 "gemm_tile(2,2,4)": "heldout"}
    assert all(r["baseline_cycles"] == 1000.0 for r in res["kernels"])
    assert load_model(t / "best.pt").metadata["which"] == "best"
    assert load_model(t / "latest.pt").metadata["epoch"] == 3
    assert len((t / "curves.csv").read_text().splitlines()) == 1 + 4  # header + epochs 0..3


def test_a_diverging_run_stops_with_a_clear_error_and_keeps_its_curves():
    from chronos.errors import TrainingDivergedError

    env = TransformEnv(kernels((4, 6, 4), (2, 2, 2)), StandInBackend())
    torch.manual_seed(0)
    policy, ref = TransformPolicy(), TransformPolicy()
    ref.load_state_dict(policy.state_dict())
    cfg = GRPOConfig(epochs=20, lr=1e30, update_iters=4, max_grad_norm=0.0, log_interval=0)
    with pytest.raises(TrainingDivergedError, match="lower grpo.lr") as e:
        train_grpo(policy, ref, env, cfg, log=None)
    assert [h["epoch"] for h in e.value.history] == list(range(e.value.epoch))  # the curves up to it


def test_kernel_split_and_env_settings_are_checked():
    torch.manual_seed(0)
    policy = TransformPolicy()
    env = TransformEnv(kernels((2, 2, 2), (2, 2, 4)), StandInBackend())
    cfg = GRPOConfig(epochs=1, log_interval=0)
    with pytest.raises(TrainingError, match="no training kernels"):
        train_grpo(policy, policy, env, cfg, heldout_kernels=env.names, log=None)
    with pytest.raises(TrainingError, match="not in the env: nope"):
        train_grpo(policy, policy, env, cfg, train_kernels=["nope"], log=None)
    with pytest.raises(ValueError, match="episode settings"):  # the env must be built from cfg.env
        train_grpo(policy, policy, TransformEnv(env.kernels, StandInBackend(), EnvConfig(step_cost=0.1)), cfg,
                   log=None)


def test_log_lines_every_interval_and_at_the_end():
    torch.manual_seed(0)
    policy = TransformPolicy()
    env = TransformEnv(kernels((2, 2, 2)), StandInBackend())
    lines = []
    train_grpo(policy, TransformPolicy(), env, GRPOConfig(epochs=5, log_interval=2), log=lines.append)
    assert [int(x.split()[2]) for x in lines] == [2, 4, 5] and "held-out None" in lines[0]


def test_greedy_eval_is_the_shared_decoder_scored():
    from chronos.rl.decode import greedy_decode

    torch.manual_seed(4)
    policy = TransformPolicy()
    env = TransformEnv(kernels((2, 2, 2), (2, 4, 2)), StandInBackend())
    rs = greedy_eval(env, policy, env.names, 6)
    dec = greedy_decode([env.space(k) for k in env.names], policy, 6)
    want = [(k, d.sequence, d.key) for k, d in zip(env.names, dec, strict=True)]
    assert [(r.kernel, tuple(r.sequence), r.key) for r in rs] == want
    assert all(r.outcome is not None and r.reward == env.rewards(r.kernel, [r.key])[0][0] for r in rs)
