"""The policy's k most probable action sets on a kernel (beam search over masked, canonical states).

Greedy decoding answers one sequence; an optimize path that may measure a few candidates does better with
the policy's k most probable *distinct final sets* (two orders of one set are one variant). A finished
candidate's score is the log-probability of its sequence including the stop (or of its `max_steps`
transforms when it is cut off there); states are canonical sets, so paths reaching one set merge (the more
probable path is kept).
"""

from __future__ import annotations

import numpy as np
import torch

from chronos.actions import ACTION_NAMES, STOP
from chronos.rl.grpo import split_obs


def policy_beam(space, policy, k: int, max_steps: int, width: int | None = None) -> list[tuple[tuple[str, ...], float]]:
    """[(final set, log-probability)], best first, at most `k` distinct sets (the empty set = stop at once).

    `space` is a chronos.rl.env.KernelSpace (obs, mask, child); `width` (default 2k) bounds the live beam.
    """
    width = width or 2 * k
    live: dict[tuple[str, ...], float] = {(): 0.0}
    done: dict[tuple[str, ...], float] = {}
    policy = policy.eval()
    for step in range(max_steps + 1):
        if not live:
            break
        keys = list(live)
        obs = torch.from_numpy(np.stack([space.obs(key) for key in keys]))
        with torch.no_grad():
            logp = torch.log_softmax(policy(*split_obs(obs)), -1).numpy()
        nxt: dict[tuple[str, ...], float] = {}
        for key, row in zip(keys, logp, strict=True):
            base = live[key]
            stop_score = base + (float(row[STOP]) if step < max_steps else 0.0)
            if stop_score > done.get(key, -np.inf):
                done[key] = stop_score
            if step == max_steps:
                continue
            mask = space.mask(key)
            for a in np.flatnonzero(mask):
                if a == STOP:
                    continue
                child = space.child(key, ACTION_NAMES[a])
                if child is None:
                    continue
                s = base + float(row[a])
                if s > nxt.get(child, -np.inf):
                    nxt[child] = s
        best_done = sorted(done.values(), reverse=True)[:k]
        floor = best_done[-1] if len(best_done) == k else -np.inf
        # a live state's score only falls as it grows: prune those already below the k-th finished one
        live = dict(sorted(((c, s) for c, s in nxt.items() if s > floor), key=lambda t: -t[1])[:width])
    return sorted(done.items(), key=lambda t: -t[1])[:k]
