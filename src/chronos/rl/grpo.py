"""DA-GRPO: Demonstration-Anchored Group Relative Policy Optimisation (the seed's method, shared/SEED.md).

Per epoch and per training kernel, a group of `group_size` (8) rollouts:
  * 1 anchor: the reference (BC) policy's greedy rollout (`anchor="greedy"`, default; "sample" samples it),
    so every group holds what the demonstrations would do;
  * 7 with a forced first action: distinct legal first transforms drawn without replacement (seeded); when a
    kernel has fewer legal first transforms than that, the rest sample their first action. After the first
    step they sample from the current policy at the epoch's temperature.
Reward log(c_base / c_final) (terminal, measured through the env's Evaluator); advantage = reward - the
group's median (MC-GRPO), then z-normalised over the whole epoch batch; every decision of a rollout gets its
rollout's advantage. Loss per decision = clipped surrogate (eps 0.2) + beta * KL(current || reference).

Choices the seed leaves open, made here:
  * "old" log-probs are the current policy's at collection time (temperature 1): the anchor and the forced
    first steps were not sampled by it, but they enter the loss with the same ratio pi_theta / pi_old, so the
    clip bounds how far one epoch moves even an off-policy action (`forced_step_in_loss=False` drops the
    forced first step from the loss instead). Temperature only shapes sampling, not the loss.
  * KL is exact over the 21 masked actions at every visited state (cheap here), not a sampled estimator.
  * Dropout is off throughout (rollouts and updates) so that ratios are not dropout noise.
  * `update_iters` gradient steps per epoch batch (the clip only acts from the second).
Rollouts of all kernels advance in lockstep, so each step is one batched forward, and the env caches each
state's features and mask, so a variant is transformed once for the whole run.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from chronos.actions import ACTION_NAMES, NUM_ACTIONS, STOP
from chronos.errors import ChronosError
from chronos.features import NUM_FEATURES
from chronos.rl.env import TransformEnv
from chronos.rl.policy import TransformPolicy
from chronos.search.base import Outcome


class TrainingDivergedError(ChronosError):
    """The policy's loss or weights stopped being finite: the step size is too large for this problem."""

    def __init__(self, epoch: int, what: str):
        super().__init__(f"GRPO diverged at epoch {epoch}: {what}; lower grpo.lr or grpo.update_iters "
                         "(params.yaml) and rerun", repro="dvc exp run -S grpo.lr=0.0003")
        self.epoch = epoch


@dataclass
class GRPOArgs:
    epochs: int = 450
    """Training epochs (the seed's 450); each runs one group per training kernel."""
    group_size: int = 8
    """Rollouts per kernel per epoch: 1 anchor + (group_size - 1) with forced first actions."""
    clip_eps: float = 0.2
    """PPO clip range of the probability ratio."""
    beta: float = 0.01
    """Weight of KL(current || reference) in the loss."""
    lr: float = 3e-4
    """Adam learning rate."""
    update_iters: int = 4
    """Gradient steps on each epoch's batch."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip per step (0: off)."""
    temperature_start: float = 1.0
    """Sampling temperature at the first epoch."""
    temperature_end: float = 0.5
    """Sampling temperature at the last epoch."""
    temperature_schedule: str = "linear"
    """How the temperature goes from start to end: linear | cosine | exponential | constant (start only)."""
    anchor: str = "greedy"
    """How the reference policy rolls out the anchor: greedy | sample (at the epoch's temperature)."""
    forced_step_in_loss: bool = True
    """Whether a forced first action enters the loss (with the same ratio as the sampled steps)."""
    max_steps: int = 6
    """Most transforms per rollout (the env's truncation)."""
    step_cost: float = 0.0
    """Reward cost per applied transform (0: the seed's outcome-only reward)."""
    invalid_penalty: float = -1.0
    """Reward of a rollout whose final variant is invalid."""
    seed: int = 0
    """Seeds forced-action draws and sampling."""
    train_kernels: list[str] | None = None
    """Kernels trained on (None: every env kernel not held out)."""
    heldout_kernels: list[str] = field(default_factory=list)
    """Kernels never trained on; evaluated greedily each epoch for the curves (never for model selection)."""
    log_interval: int = 10
    """Print a progress line every this many epochs (0: never)."""


def temperature(args: GRPOArgs, epoch: int) -> float:
    """The sampling temperature of epoch `epoch` (1-based)."""
    frac = 0.0 if args.epochs <= 1 else (epoch - 1) / (args.epochs - 1)
    a, b = args.temperature_start, args.temperature_end
    kind = args.temperature_schedule
    if kind == "constant":
        return a
    if kind == "linear":
        return a + (b - a) * frac
    if kind == "cosine":
        return b + (a - b) * 0.5 * (1 + math.cos(math.pi * frac))
    if kind == "exponential":
        return a * (b / a) ** frac
    raise ValueError(f"temperature_schedule must be linear, cosine, exponential or constant, not {kind!r}")


@dataclass
class Rollout:
    kernel: str
    mode: str  # anchor | forced | sample | greedy
    forced: int | None = None
    key: tuple[str, ...] = ()  # canonical set applied so far (the final set once done)
    states: list[tuple[str, ...]] = field(default_factory=list)  # the state before each decision
    actions: list[int] = field(default_factory=list)
    done: bool = False
    reward: float = 0.0
    outcome: Outcome | None = None

    @property
    def sequence(self) -> list[str]:
        return [ACTION_NAMES[a] for a in self.actions if a != STOP]


def split_obs(obs: torch.Tensor):
    return obs[:, :NUM_FEATURES], obs[:, NUM_FEATURES:NUM_FEATURES + NUM_ACTIONS], obs[:, NUM_FEATURES + NUM_ACTIONS:]


def run_rollouts(env: TransformEnv, rollouts: list[Rollout], policy: TransformPolicy, reference: TransformPolicy,
                 temp: float, gen: torch.Generator, max_steps: int, anchor: str = "greedy") -> None:
    """Advance every rollout to its end in lockstep: one batched forward per step for all of them."""
    for t in range(max_steps):
        active = [r for r in rollouts if not r.done]
        if not active:
            break
        obs = torch.from_numpy(np.stack([env.space(r.kernel).obs(r.key) for r in active]))
        with torch.no_grad():
            logits = policy(*split_obs(obs))
            ref_logits = reference(*split_obs(obs)) if any(r.mode == "anchor" for r in active) else logits
            sampled = torch.multinomial(torch.softmax(logits / temp, -1), 1, generator=gen).squeeze(1)
            ref_sampled = torch.multinomial(torch.softmax(ref_logits / temp, -1), 1, generator=gen).squeeze(1)
        greedy, ref_greedy = logits.argmax(-1), ref_logits.argmax(-1)
        for i, r in enumerate(active):
            if r.mode == "forced" and t == 0:
                a = r.forced
            elif r.mode == "anchor":
                a = int(ref_sampled[i] if anchor == "sample" else ref_greedy[i])
            elif r.mode == "greedy":
                a = int(greedy[i])
            else:
                a = int(sampled[i])
            r.states.append(r.key)
            r.actions.append(a)
            if a == STOP:
                r.done = True
            else:
                r.key = env.space(r.kernel).child(r.key, ACTION_NAMES[a])
    for r in rollouts:
        r.done = True  # the rest were truncated after max_steps transforms


def score(env: TransformEnv, rollouts: list[Rollout]) -> None:
    """Terminal rewards and outcomes, one batched evaluation per kernel."""
    by_kernel: dict[str, list[Rollout]] = {}
    for r in rollouts:
        by_kernel.setdefault(r.kernel, []).append(r)
    for kernel, rs in by_kernel.items():
        for r, (rew, out) in zip(rs, env.rewards(kernel, [r.key for r in rs]), strict=True):
            r.reward, r.outcome = rew, out


def greedy_eval(env: TransformEnv, policy: TransformPolicy, kernels: list[str], max_steps: int) -> list[Rollout]:
    """The policy's greedy rollout on each kernel, scored."""
    rs = [Rollout(k, "greedy") for k in kernels]
    run_rollouts(env, rs, policy, policy, 1.0, torch.Generator(), max_steps)
    score(env, rs)
    return rs


def summarize(env: TransformEnv, rs: list[Rollout]) -> dict:
    """Mean cycle change (an invalid final counts as 0: the optimize path falls back to the baseline),
    mean log-gain, distinct sequences, invalid count."""
    if not rs:
        return {"mean_change": None, "mean_log_gain": None, "distinct": 0, "invalid": 0}
    changes, gains = [], []
    for r in rs:
        base = env.baseline(r.kernel).cycles
        ok = r.outcome is not None and r.outcome.valid
        changes.append(r.outcome.cycles / base - 1.0 if ok else 0.0)
        gains.append(math.log(base / r.outcome.cycles) if ok else 0.0)
    return {"mean_change": float(np.mean(changes)), "mean_log_gain": float(np.mean(gains)),
            "distinct": len({tuple(r.key) for r in rs}), "invalid": sum(not r.outcome.valid for r in rs)}


def make_group(env: TransformEnv, kernel: str, size: int, rng: random.Random) -> list[Rollout]:
    """1 anchor + (size - 1) rollouts forced to distinct legal first transforms (sampling the rest)."""
    legal = [i for i in range(NUM_ACTIONS) if i != STOP and env.space(kernel).mask(())[i] > 0.5]
    forced = rng.sample(legal, min(size - 1, len(legal)))
    return ([Rollout(kernel, "anchor")] + [Rollout(kernel, "forced", forced=a) for a in forced]
            + [Rollout(kernel, "sample") for _ in range(size - 1 - len(forced))])


def advantages(groups: list[list[float]]) -> list[list[float]]:
    """reward - group median, then z-normalised over all rollouts of the batch."""
    centred = [np.asarray(g, dtype=np.float64) - np.median(g) for g in groups]
    flat = np.concatenate(centred)
    mu, sd = flat.mean(), flat.std()
    return [((c - mu) / (sd + 1e-8)).tolist() for c in centred]


def grpo_loss(policy: TransformPolicy, obs, actions, adv, old_logp, ref_logp_all, clip_eps: float, beta: float):
    """(loss, surrogate, kl, clip fraction) for a batch of decisions."""
    logits = policy(*split_obs(obs))
    allowed = logits > torch.finfo(torch.float32).min  # what the mask (plus stop) allows
    logp_all = torch.log_softmax(logits, -1)
    logp = logp_all.gather(1, actions[:, None]).squeeze(1)
    ratio = torch.exp(logp - old_logp)
    surr = -torch.min(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv).mean()
    p = logp_all.exp()
    kl = torch.where(allowed, p * (logp_all - ref_logp_all), torch.zeros_like(p)).sum(-1).mean()
    clip_frac = ((ratio - 1).abs() > clip_eps).float().mean()
    return surr + beta * kl, surr.detach(), kl.detach(), clip_frac


def train_grpo(policy: TransformPolicy, reference: TransformPolicy, env: TransformEnv, args: GRPOArgs,
               on_epoch: Callable[[dict, TransformPolicy], None] | None = None,
               log: Callable[[str], None] | None = print) -> tuple[dict, dict, list[dict]]:
    """Train `policy` (updated in place) against the frozen `reference`; returns (best state dict, latest
    state dict, per-epoch history). Epoch 0 is the starting policy, evaluated but not trained; "best" is the
    lowest greedy mean cycle change over the training kernels (held-out kernels never select).
    The env's episode settings are replaced by args' max_steps, step_cost and invalid_penalty."""
    env.config = replace(env.config, max_steps=args.max_steps, step_cost=args.step_cost,
                         invalid_penalty=args.invalid_penalty)
    held = [k for k in args.heldout_kernels if k in env.kernels]
    train = list(args.train_kernels) if args.train_kernels is not None else [k for k in env.names if k not in held]
    if not train:
        raise ValueError("no training kernels")
    if args.anchor not in ("greedy", "sample"):
        raise ValueError(f"anchor must be greedy or sample, not {args.anchor!r}")
    reference = copy.deepcopy(reference).eval().requires_grad_(False)
    policy.eval()  # dropout off: see the module docstring
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    rng, gen = random.Random(args.seed), torch.Generator().manual_seed(args.seed)

    def evaluate(row: dict) -> None:
        for name, ks in (("train", train), ("heldout", held)):
            for key, val in summarize(env, greedy_eval(env, policy, ks, args.max_steps)).items():
                row[f"{name}_{key}"] = val

    history: list[dict] = []
    row = {"epoch": 0, "temperature": None}
    evaluate(row)
    best = (row["train_mean_change"], 0, copy.deepcopy(policy.state_dict()))
    row["best_epoch"] = 0
    history.append(row)
    t0 = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        temp = temperature(args, epoch)
        groups = [make_group(env, k, args.group_size, rng) for k in train]
        run_rollouts(env, [r for g in groups for r in g], policy, reference, temp, gen, args.max_steps, args.anchor)
        score(env, [r for g in groups for r in g])
        adv = advantages([[r.reward for r in g] for g in groups])

        obs, acts, advs = [], [], []
        for g, ag in zip(groups, adv, strict=True):
            for r, a in zip(g, ag, strict=True):
                for t, (key, act) in enumerate(zip(r.states, r.actions, strict=True)):
                    if r.mode == "forced" and t == 0 and not args.forced_step_in_loss:
                        continue
                    obs.append(env.space(r.kernel).obs(key))
                    acts.append(act)
                    advs.append(a)
        obs_t = torch.from_numpy(np.stack(obs))
        acts_t, adv_t = torch.tensor(acts), torch.tensor(advs, dtype=torch.float32)
        with torch.no_grad():
            old_logp = torch.log_softmax(policy(*split_obs(obs_t)), -1).gather(1, acts_t[:, None]).squeeze(1)
            ref_logp_all = torch.log_softmax(reference(*split_obs(obs_t)), -1)
        for _ in range(args.update_iters):
            loss, surr, kl, clip_frac = grpo_loss(policy, obs_t, acts_t, adv_t, old_logp, ref_logp_all,
                                                  args.clip_eps, args.beta)
            if not torch.isfinite(loss):
                raise TrainingDivergedError(epoch, "the loss is not finite")
            opt.zero_grad()
            loss.backward()
            if args.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), args.max_grad_norm)
            opt.step()
        if not all(torch.isfinite(prm).all() for prm in policy.parameters()):
            raise TrainingDivergedError(epoch, "the weights are not finite after the update")

        rewards = [r.reward for g in groups for r in g]
        row = {"epoch": epoch, "temperature": temp, "loss": loss.item(), "surrogate": surr.item(),
               "kl": kl.item(), "clip_frac": clip_frac.item(), "decisions": len(acts),
               "mean_reward": float(np.mean(rewards)),
               "anchor_reward": float(np.mean([g[0].reward for g in groups])),
               "elapsed_s": time.perf_counter() - t0}
        evaluate(row)
        if row["train_mean_change"] < best[0]:
            best = (row["train_mean_change"], epoch, copy.deepcopy(policy.state_dict()))
        row["best_epoch"] = best[1]
        history.append(row)
        if on_epoch:
            on_epoch(row, policy)
        if log and args.log_interval and (epoch % args.log_interval == 0 or epoch == args.epochs):
            log(f"grpo epoch {epoch:4d} T={temp:.2f} reward {row['mean_reward']:+.4f} kl {row['kl']:.4f} "
                f"train change {row['train_mean_change']:+.2%} held-out "
                f"{row['heldout_mean_change'] if row['heldout_mean_change'] is None else format(row['heldout_mean_change'], '+.2%')} "
                f"distinct {row['train_distinct']} best@{best[1]} ({row['elapsed_s']:.0f} s)")
    return best[2], copy.deepcopy(policy.state_dict()), history
