"""Behaviour cloning on a synthetic demonstration set (labels are a made-up function of the features)."""

import random

import pytest
import torch

from chronos.config import BCConfig
from chronos.errors import TrainingError
from chronos.rl.bc import split_kernels, train_bc

LABELS = ["vec_ld", "vec_st", "maxnreg_128", "stop"]


def synthetic_demos(n_kernels=16, per_kernel=12, seed=0):
    rng = random.Random(seed)
    demos = []
    for k in range(n_kernels):
        for _ in range(per_kernel):
            f = [rng.uniform(0, 1) for _ in range(25)]
            label = LABELS[max(range(4), key=lambda i: f[i])]  # the largest of the first 4 features decides
            mask = [1] * 21
            if label != "maxnreg_128":  # some masked-out actions, never the demonstrated one
                mask[12] = 0
            demos.append({"kernel": f"k{k}", "features": f, "mask": mask, "history": [0] * 21,
                          "action": label})
    return demos


def test_learns_synthetic_demos_and_splits_by_kernel():
    demos = synthetic_demos()
    policy, stats = train_bc(demos, BCConfig(epochs=60, lr=3e-3, batch_size=32, heldout_fraction=0.25,
                                             seed=1))
    assert set(stats["train_kernels"]).isdisjoint(stats["heldout_kernels"])
    assert len(stats["heldout_kernels"]) == 4
    assert stats["n_train"] + stats["n_heldout"] == len(demos)
    assert stats["best_train_acc"] >= 0.9 and stats["best_heldout_acc"] >= 0.8
    assert len(stats["history"]) == 60 and 1 <= stats["best_epoch"] <= 60
    conf = stats["confusion_heldout"]
    assert sum(sum(r.values()) for r in conf.values()) == stats["n_heldout"]
    assert not policy.training


def test_deterministic_under_seed():
    demos = synthetic_demos(n_kernels=6, per_kernel=5)
    cfg = BCConfig(epochs=3, seed=7)
    p1, s1 = train_bc(demos, cfg, heldout_kernels=["k0", "k1"])
    p2, s2 = train_bc(demos, cfg, heldout_kernels=["k0", "k1"])
    assert s1["history"] == s2["history"] and s1["heldout_kernels"] == ["k0", "k1"]
    for a, b in zip(p1.state_dict().values(), p2.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_split_is_deterministic_and_explicit_list_wins():
    names = [f"k{i}" for i in range(10)]
    assert split_kernels(names, BCConfig(seed=3)) == split_kernels(names, BCConfig(seed=3))
    train, held = split_kernels(names, BCConfig(), heldout_kernels=["k9", "zzz"])
    assert held == ["k9"] and len(train) == 9
    assert split_kernels(names, BCConfig(), heldout_kernels=[]) == (sorted(names), [])


def test_log_gets_one_line_per_epoch():
    lines = []
    train_bc(synthetic_demos(n_kernels=3, per_kernel=4), BCConfig(epochs=2), log=lines.append)
    assert len(lines) == 2 and lines[0].startswith("bc epoch   1")


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.update(action="jump"), "unknown action 'jump'"),
    (lambda d: d.update(features=[0.0] * 24), "'features' must be 25 numbers"),
    (lambda d: d.update(mask="1" * 21), "'mask' must be 21 numbers"),
    (lambda d: d.pop("history"), "'history' must be 21 numbers"),
    (lambda d: d.pop("kernel"), "'kernel' name"),
])
def test_malformed_demonstrations_are_training_errors(edit, match):
    demos = synthetic_demos(n_kernels=2, per_kernel=3)
    edit(demos[4])
    with pytest.raises(TrainingError, match=match):
        train_bc(demos, BCConfig(epochs=1))


def test_no_demonstrations_or_all_held_out():
    with pytest.raises(TrainingError, match="at least one"):
        train_bc([], BCConfig())
    with pytest.raises(TrainingError, match="no training demonstrations"):
        train_bc(synthetic_demos(n_kernels=2, per_kernel=2), BCConfig(), heldout_kernels=["k0", "k1"])
