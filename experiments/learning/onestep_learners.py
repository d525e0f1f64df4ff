"""Which one-step learner generalises to a workload it never saw? Leave-one-workload-out on the census (#14).

    python experiments/learning/onestep_learners.py [--heldout reports/heldout.json] [--without-l2-last]

Nothing is measured: every score is a recorded census outcome (stage census: every legal single v2 action
beside the baseline in one H200 comparison), scored as stage heldout scores its census column (the deploy
gain: -log ratio where the verdict was faster, else 0), per held-out family with the others as training.
Learners beside the stage's own BC+GRPO policy (read from `--heldout`, not retrained):
  fixed        the action with the largest summed training gain (the stage's comparator: gain 0 where
               it is not legal on the test kernel)
  fixed_top3   the 3 best of that ranking that are legal on the test kernel, the fastest deploys (what
               beam 3 costs, without learning)
  knn_k        the action with the largest mean signed reward over the k nearest training kernels
               (standardised observation-v2 features), among the test kernel's legal actions
  ridge        per action a ridge regression of the signed reward on the features; the largest prediction
The oracle is the census's own best, so it is scored on the comparison it was picked in (a winner's curse:
the shares below are lower bounds for any learner). `--without-l2-last` drops every L2 evict_last action
from the space first (experiments/measurement/l2_demote.py asks whether their wins outlive a proper flush).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from chronos.actions import STOP, resolve_space
from chronos.config import load
from chronos.rl.heldout import fixed_action, fixed_ranking, legal_top, load_decisions, picks_of
from chronos.rl.onestep import best_action, deployed_gain

METHODS = ("fixed", "fixed_top3", "knn_1", "knn_3", "knn_7", "ridge")


def features(decisions: list, n_actions: int) -> np.ndarray:
    return np.stack([d.obs[: len(d.obs) - 2 * n_actions] for d in decisions]).astype(np.float64)


def drop_actions(decisions: list, space, word: str) -> None:
    """Mark every action whose name holds `word` as not legal (NaN reward and gain, mask 0)."""
    idx = [i for i, n in enumerate(space.names) if word in n]
    nf = len(decisions[0].obs) - 2 * space.size
    for d in decisions:
        d.reward[idx] = np.nan
        d.gain[idx] = np.nan
        d.obs[nf + np.array(idx)] = 0.0


def _legal_best(d, scores: np.ndarray) -> int:
    scores = np.where(np.isnan(d.reward), -np.inf, scores)
    scores[STOP] = -np.inf
    return int(np.argmax(scores)) if np.isfinite(scores).any() else STOP


def standardised(train: list, test: list, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Both sets' features, centred and scaled by the training set's mean and spread."""
    xtr, xte = features(train, n_actions), features(test, n_actions)
    mu, sd = xtr.mean(0), xtr.std(0)
    sd[sd == 0] = 1.0
    return (xtr - mu) / sd, (xte - mu) / sd


def knn(train: list, test: list, n_actions: int, k: int) -> list[list[int]]:
    xtr, xte = standardised(train, test, n_actions)
    rewards = np.stack([d.reward for d in train])
    picks = []
    for d, x in zip(test, xte, strict=True):
        near = np.argsort(((xtr - x) ** 2).sum(1))[:k]
        seen = ~np.isnan(rewards[near])
        mean = np.where(seen.any(0), np.nansum(rewards[near], axis=0) / np.maximum(seen.sum(0), 1), np.nan)
        picks.append([_legal_best(d, np.nan_to_num(mean, nan=-np.inf))])
    return picks


def ridge(train: list, test: list, n_actions: int, lam: float = 10.0) -> list[list[int]]:
    xtr, xte = standardised(train, test, n_actions)
    xtr, xte = np.c_[xtr, np.ones(len(xtr))], np.c_[xte, np.ones(len(xte))]
    rewards = np.stack([d.reward for d in train])
    pred = np.full((len(test), n_actions), -np.inf)
    for a in range(n_actions):
        seen = ~np.isnan(rewards[:, a])
        if a == STOP or seen.sum() < 3:
            continue
        x, y = xtr[seen], rewards[seen, a]
        w = np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ y)
        pred[:, a] = xte @ w
    return [[_legal_best(d, p)] for d, p in zip(test, pred, strict=True)]


def fold(train: list, test: list, n_actions: int) -> dict[str, list[list[int]]]:
    rank = fixed_ranking(train)
    return {"fixed": [[fixed_action(train)] for _ in test],
            "fixed_top3": [legal_top(d, rank, 3) for d in test],
            **{f"knn_{k}": knn(train, test, n_actions, k) for k in (1, 3, 7)},
            "ridge": ridge(train, test, n_actions)}


def stage_gains(heldout: Path, decisions: dict, space) -> dict[str, dict[str, float]]:
    """kernel -> the stage's policy / beam / bc census gains, re-scored here from its recorded picks."""
    out = {}
    for r in json.loads(heldout.read_text())["kernels"]:
        out[r["kernel"]] = {m: deployed_gain(decisions[r["kernel"]], [space.index[a] for a in
                                                                      picks_of(r["actions"], m)])
                            for m in ("policy", "beam", "bc")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--census", type=Path, default=Path("data/census"))
    ap.add_argument("--heldout", type=Path, default=Path("reports/heldout.json"))
    ap.add_argument("--without-l2-last", action="store_true")
    args = ap.parse_args()
    cfg = load(args.params)
    space = resolve_space(cfg.search.census.space)
    decisions = load_decisions(args.kernels, args.census, cfg.search.census.families, space)
    if args.without_l2_last:
        drop_actions(decisions, space, "l2_evict_last")
    by_kernel = {d.kernel: d for d in decisions}
    stage = None if args.without_l2_last else stage_gains(args.heldout, by_kernel, space)
    gains: dict[str, list[float]] = {m: [] for m in (*METHODS, "oracle", *(("policy", "beam", "bc")
                                                                          if stage else ()))}
    families = [f for f in cfg.search.census.families if any(d.family == f for d in decisions)]
    for fam in families:
        test = [d for d in decisions if d.family == fam]
        picks = fold([d for d in decisions if d.family != fam], test, space.size)
        picks["oracle"] = [[best_action(d)] for d in test]
        for m, p in picks.items():
            gains[m] += [deployed_gain(d, x) for d, x in zip(test, p, strict=True)]
        for m in ("policy", "beam", "bc") if stage else ():
            gains[m] += [stage[d.kernel][m] for d in test]
    total = {m: float(np.sum(g)) for m, g in gains.items()}
    n, oracle, fixed = len(gains["oracle"]), total["oracle"], total["fixed"]
    print(f"{n} kernels, {len(families)} held-out families, census-scored"
          f"{' (L2 evict_last actions dropped)' if args.without_l2_last else ''}")
    for m, g in total.items():
        share = g / oracle if oracle > 0 else float("nan")
        gap = (g - fixed) / (oracle - fixed) if oracle > fixed else float("nan")
        print(f"  {m:11s} geomean {np.exp(g / n):.4f}  oracle share {share:6.1%}  gap closed {gap:7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
