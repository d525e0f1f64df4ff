"""policy_beam: the k most probable distinct final sets, checked against brute force over every path."""

import itertools
import math

import numpy as np
import pytest
import torch

from chronos.actions import ACTION_NAMES, STOP
from chronos.rl.beam import policy_beam
from chronos.rl.env import KernelSpace
from chronos.rl.policy import TransformPolicy

from .standin import kernels


def _space():
    (_spec, root), = kernels((2, 4, 2)).values()
    return KernelSpace(root)


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
    got = policy_beam(space, policy, k=6, max_steps=2, width=10_000)
    assert [k for k, _ in got] == [k for k, _ in exact[:6]]
    assert np.allclose([s for _, s in got], [s for _, s in exact[:6]], atol=1e-5)


def test_beam_sets_are_distinct_canonical_and_best_first():
    torch.manual_seed(3)
    got = policy_beam(_space(), TransformPolicy().eval(), k=8, max_steps=4)
    sets = [k for k, _ in got]
    assert len(got) == 8 and len(set(sets)) == 8
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(got))
    assert all(s <= 0 for _, s in got)
