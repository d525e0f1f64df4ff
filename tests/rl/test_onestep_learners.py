"""experiments/learning/onestep_learners.py: the comparators it scores the stage's policy against learn what
a feature decides (knn, ridge), the fixed ranking stays one action, its top 3 keeps to legal actions, and
dropping an action family masks it everywhere."""

from __future__ import annotations

import numpy as np

from chronos.actions import STOP, V2
from tests.benchmark_module import load_script
from tests.rl.test_onestep import A, B, C, _kernel


def _bench():
    return load_script("experiments/learning/onestep_learners.py")


def test_comparators_learn_the_deciding_feature_and_keep_to_legal_actions():
    bench = _bench()
    train = [_kernel(i, i % 2 == 0) for i in range(20)]
    test = [_kernel(100 + i, i % 2 == 0) for i in range(6)]
    picks = bench.fold(train, test, V2.size)
    want = [[V2.index[A if i % 2 == 0 else B]] for i in range(6)]
    assert picks["knn_1"] == picks["knn_3"] == picks["ridge"] == want
    assert len({tuple(p) for p in picks["fixed"]}) == 1  # one action for every kernel
    legal = {V2.index[a] for a in (A, B, C)}
    assert all(len(p) == 3 and set(p) == legal for p in picks["fixed_top3"])
    assert all(STOP not in p for ps in picks.values() for p in ps)


def test_dropping_a_family_masks_it_in_rewards_gains_and_the_observation():
    bench = _bench()
    ds = [_kernel(i, True) for i in range(3)]
    bench.drop_actions(ds, V2, "l2_evict_first")
    i = V2.index[A]
    nf = len(ds[0].obs) - 2 * V2.size
    assert all(np.isnan(d.reward[i]) and np.isnan(d.gain[i]) and d.obs[nf + i] == 0.0 for d in ds)
    assert all(d.obs[nf + V2.index[B]] == 1.0 for d in ds)
