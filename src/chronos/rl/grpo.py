"""DA-GRPO: Demonstration-Anchored Group Relative Policy Optimisation (the seed's method, shared/SEED.md).

Per epoch and per training kernel, a group of `group_size` (8) rollouts:
  * 1 anchor: the reference (BC) policy's greedy rollout (`anchor: greedy`, default; "sample" samples it),
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
    `off_policy_ratio: behaviour` takes the collection procedure's probability as "old" for those decisions
    instead: 1 for a forced first step and for every decision of the greedy anchor (so ratio = pi_theta(a):
    each is weighted by how likely the policy is to take it, the policy gradient of an enumerated action),
    the reference's at the epoch's temperature for a sampled anchor. With "current" a forced step with
    negative advantage is pushed down at full strength every epoch however improbable it already is (and
    lifts every other action, stop included, which no rollout takes at the first state): the first state's
    log-probs run away (-12 under BC, ~-40,000 by epoch 250 at lr 1e-3), the softmax saturates, the greedy
    decode collapses (to stop in #6) and the run diverges; "behaviour" weighs each by pi_theta(a), and PPO's
    min gives a negative one with pi < 1 - eps no gradient (reports/grpo_stability/README.md).
  * KL is exact over the 21 masked actions at every visited state (cheap here), not a sampled estimator.
  * Dropout is off throughout (rollouts and updates) so that ratios are not dropout noise.
  * `update_iters` gradient steps per epoch batch (the clip only acts from the second).
Rollouts of all kernels advance in lockstep, so each step is one batched forward, and the env caches each
state's features and mask, so a variant is transformed once for the whole run. Evaluation is the shared
greedy decoder (chronos.rl.decode) over the env's spaces, the same one inference runs on a raw PTX.
"""

from __future__ import annotations

import copy
import csv
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from chronos.actions import SEED, STOP, ActionSpace
from chronos.config import GRPOConfig
from chronos.errors import TrainingDivergedError, TrainingError
from chronos.progress import progress
from chronos.rl.decode import greedy_decode, split_obs
from chronos.rl.env import TransformEnv
from chronos.rl.policy import TransformPolicy
from chronos.search.base import Outcome


def temperature(cfg: GRPOConfig, epoch: int) -> float:
    """The sampling temperature of epoch `epoch` (1-based)."""
    frac = 0.0 if cfg.epochs <= 1 else (epoch - 1) / (cfg.epochs - 1)
    a, b = cfg.temperature_start, cfg.temperature_end
    kind = cfg.temperature_schedule
    if kind == "constant":
        return a
    if kind == "linear":
        return a + (b - a) * frac
    if kind == "cosine":
        return b + (a - b) * 0.5 * (1 + math.cos(math.pi * frac))
    if kind == "exponential":
        return a * (b / a) ** frac
    raise ValueError(f"unhandled temperature_schedule {kind!r}")  # GRPOConfig admits only the four above


@dataclass
class Rollout:
    kernel: str
    mode: str  # anchor | forced | sample (training) | greedy (evaluation)
    forced: int | None = None
    key: tuple[str, ...] = ()  # canonical set applied so far (the final set once done)
    states: list[tuple[str, ...]] = field(default_factory=list)  # the state before each decision
    actions: list[int] = field(default_factory=list)
    done: bool = False
    reward: float = 0.0
    outcome: Outcome | None = None
    space: ActionSpace = SEED  # the env's: names the action indices

    @property
    def sequence(self) -> list[str]:
        return [self.space.names[a] for a in self.actions if a != STOP]


def run_rollouts(env: TransformEnv, rollouts: list[Rollout], policy: TransformPolicy,
                 reference: TransformPolicy, temp: float, gen: torch.Generator, max_steps: int,
                 anchor: str = "greedy") -> None:
    """Advance every training rollout (anchor, forced, sample) to its end in lockstep: one batched forward
    per step for all of them. Both draws are made every step, whoever uses them, so the generator's stream
    does not depend on the group's modes."""
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
        ref_greedy = ref_logits.argmax(-1)
        for i, r in enumerate(active):
            if r.mode == "forced" and t == 0:
                a = r.forced
            elif r.mode == "anchor":
                a = int(ref_sampled[i] if anchor == "sample" else ref_greedy[i])
            else:
                a = int(sampled[i])
            r.states.append(r.key)
            r.actions.append(a)
            if a == STOP:
                r.done = True
            else:
                r.key = env.space(r.kernel).child(r.key, env.actions.names[a])
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


def greedy_eval(env: TransformEnv, policy: TransformPolicy, kernels: Iterable[str],
                max_steps: int) -> list[Rollout]:
    """The policy's greedy rollout on each kernel (the shared decoder over the env's spaces), scored."""
    kernels = list(kernels)
    decoded = greedy_decode([env.space(k) for k in kernels], policy, max_steps)
    rs = [Rollout(k, "greedy", key=d.key, actions=[env.actions.index[a] for a in d.sequence], done=True,
                  space=env.actions)
          for k, d in zip(kernels, decoded, strict=True)]
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
    sp = env.actions
    legal = [i for i in range(sp.size) if i != STOP and env.space(kernel).mask(())[i] > 0.5]
    forced = rng.sample(legal, min(size - 1, len(legal)))
    return ([Rollout(kernel, "anchor", space=sp)]
            + [Rollout(kernel, "forced", forced=a, space=sp) for a in forced]
            + [Rollout(kernel, "sample", space=sp) for _ in range(size - 1 - len(forced))])


def advantages(groups: list[list[float]]) -> list[list[float]]:
    """reward - group median, then z-normalised over all rollouts of the batch."""
    centred = [np.asarray(g, dtype=np.float64) - np.median(g) for g in groups]
    flat = np.concatenate(centred)
    mu, sd = flat.mean(), flat.std()
    return [((c - mu) / (sd + 1e-8)).tolist() for c in centred]


def grpo_loss(policy: TransformPolicy, obs, actions, adv, old_logp, ref_logp_all, clip_eps: float,
              beta: float):
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



@dataclass
class DecisionBatch:
    """Every decision of an epoch's rollouts, with what the loss needs fixed at collection time."""

    obs: torch.Tensor
    actions: torch.Tensor
    adv: torch.Tensor
    old_logp: torch.Tensor
    ref_logp_all: torch.Tensor


def _split(env: TransformEnv, train_kernels: Iterable[str] | None,
           heldout_kernels: Iterable[str]) -> tuple[list[str], list[str]]:
    """(train, held-out) kernel names: held-out ones the env lacks are dropped; train defaults to the rest."""
    held = [k for k in heldout_kernels if k in env.kernels]
    train = list(train_kernels) if train_kernels is not None else [k for k in env.names if k not in held]
    if not train:
        raise TrainingError("no training kernels: every kernel of the env is held out")
    unknown = [k for k in train if k not in env.kernels]
    if unknown:
        raise TrainingError(f"training kernels not in the env: {', '.join(unknown)}")
    return train, held


def collect_groups(env: TransformEnv, policy: TransformPolicy, reference: TransformPolicy, kernels: list[str],
                   cfg: GRPOConfig, temp: float, rng: random.Random,
                   gen: torch.Generator) -> list[list[Rollout]]:
    """One scored group per kernel, all rolled out in lockstep."""
    groups = [make_group(env, k, cfg.group_size, rng) for k in kernels]
    flat = [r for g in groups for r in g]
    run_rollouts(env, flat, policy, reference, temp, gen, cfg.max_steps, cfg.anchor)
    score(env, flat)
    return groups


# What drew a decision: the current policy, nothing (fixed in advance: a forced first step, the greedy
# anchor's), or the reference at the epoch's temperature (a sampled anchor's).
POLICY, FIXED, REFERENCE = 0, 1, 2


def drawn_by(r: Rollout, t: int, anchor: str) -> int:
    """What drew decision `t` of training rollout `r` (POLICY, FIXED or REFERENCE)."""
    if r.mode == "forced" and t == 0:
        return FIXED
    if r.mode == "anchor":
        return FIXED if anchor == "greedy" else REFERENCE
    return POLICY


def behaviour_logp(old_logp: torch.Tensor, ref_logits: torch.Tensor, actions: torch.Tensor,
                   drawn: torch.Tensor, temp: float) -> torch.Tensor:
    """The collection procedure's log-probability of each decision (`off_policy_ratio: behaviour`): 0 for a
    fixed one, the reference's at `temp` for a sampled anchor's, `old_logp` (the current policy's) for the
    rest."""
    ref_t = torch.log_softmax(ref_logits / temp, -1).gather(1, actions[:, None]).squeeze(1)
    return torch.where(drawn == FIXED, torch.zeros_like(old_logp),
                       torch.where(drawn == REFERENCE, ref_t, old_logp))


def decision_batch(env: TransformEnv, groups: list[list[Rollout]], policy: TransformPolicy,
                   reference: TransformPolicy, forced_step_in_loss: bool, off_policy_ratio: str = "current",
                   anchor: str = "greedy", temp: float = 1.0) -> DecisionBatch:
    """Each decision with its rollout's advantage, and the old and reference log-probabilities."""
    adv = advantages([[r.reward for r in g] for g in groups])
    obs, acts, advs, drawn = [], [], [], []
    for g, ag in zip(groups, adv, strict=True):
        for r, a in zip(g, ag, strict=True):
            for t, (key, act) in enumerate(zip(r.states, r.actions, strict=True)):
                if r.mode == "forced" and t == 0 and not forced_step_in_loss:
                    continue
                obs.append(env.space(r.kernel).obs(key))
                acts.append(act)
                advs.append(a)
                drawn.append(drawn_by(r, t, anchor))
    obs_t = torch.from_numpy(np.stack(obs))
    acts_t = torch.tensor(acts)
    with torch.no_grad():
        old_logp = torch.log_softmax(policy(*split_obs(obs_t)), -1).gather(1, acts_t[:, None]).squeeze(1)
        ref_logits = reference(*split_obs(obs_t))
        ref_logp_all = torch.log_softmax(ref_logits, -1)
        if off_policy_ratio == "behaviour":
            old_logp = behaviour_logp(old_logp, ref_logits, acts_t, torch.tensor(drawn), temp)
    return DecisionBatch(obs_t, acts_t, torch.tensor(advs, dtype=torch.float32), old_logp, ref_logp_all)


def update(policy: TransformPolicy, opt: torch.optim.Optimizer, batch: DecisionBatch, cfg: GRPOConfig,
           epoch: int) -> dict:
    """`cfg.update_iters` clipped gradient steps on one batch; the last step's loss terms."""
    for _ in range(cfg.update_iters):
        loss, surr, kl, clip_frac = grpo_loss(policy, batch.obs, batch.actions, batch.adv, batch.old_logp,
                                              batch.ref_logp_all, cfg.clip_eps, cfg.beta)
        if not torch.isfinite(loss):
            raise TrainingDivergedError(epoch, "the loss is not finite")
        opt.zero_grad()
        loss.backward()
        if cfg.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
        opt.step()
    if not all(torch.isfinite(prm).all() for prm in policy.parameters()):
        raise TrainingDivergedError(epoch, "the weights are not finite after the update")
    return {"loss": loss.item(), "surrogate": surr.item(), "kl": kl.item(), "clip_frac": clip_frac.item(),
            "decisions": len(batch.actions)}


def evaluate(env: TransformEnv, policy: TransformPolicy, splits: dict[str, list[str]],
             max_steps: int) -> dict:
    """summarize() of the greedy rollouts of each named split, keys prefixed by the split's name."""
    row = {}
    for name, kernels in splits.items():
        for key, val in summarize(env, greedy_eval(env, policy, kernels, max_steps)).items():
            row[f"{name}_{key}"] = val
    return row


def _log_line(row: dict) -> str:
    held = row["heldout_mean_change"]
    return (f"grpo epoch {row['epoch']:4d} T={row['temperature']:.2f} reward {row['mean_reward']:+.4f} "
            f"kl {row['kl']:.4f} train change {row['train_mean_change']:+.2%} held-out "
            f"{held if held is None else format(held, '+.2%')} distinct {row['train_distinct']} "
            f"best@{row['best_epoch']} ({row['elapsed_s']:.0f} s)")


def _check_env(env: TransformEnv, cfg: GRPOConfig) -> None:
    """The env's episode settings must be cfg's (build it with `TransformEnv(kernels, backend, cfg.env)`)."""
    want, got = cfg.env, env.config
    episode = ("max_steps", "step_cost", "invalid_penalty")
    if any(getattr(got, k) != getattr(want, k) for k in episode):
        raise ValueError(f"the env's episode settings {got} differ from the GRPO config's {want}; "
                         "build the env with TransformEnv(kernels, backend, cfg.env)")


def _check_spaces(env: TransformEnv, *policies: TransformPolicy) -> None:
    """Every policy's logits must be the env's actions (params.yaml `actions`, the checkpoint's space)."""
    for p in policies:
        if p.action_space is not env.actions:
            raise ValueError(f"a policy of the {p.action_space.name} action space cannot act in a "
                             f"{env.actions.name}-space env (params.yaml `actions` and the checkpoint "
                             "disagree)")


def train_grpo(policy: TransformPolicy, reference: TransformPolicy, env: TransformEnv, cfg: GRPOConfig,
               train_kernels: Iterable[str] | None = None, heldout_kernels: Iterable[str] = (),
               log: Callable[[str], None] | None = print) -> tuple[dict, dict, list[dict]]:
    """Train `policy` (updated in place) against the frozen `reference`; returns (best state dict, latest
    state dict, per-epoch history). Epoch 0 is the starting policy, evaluated but not trained; every epoch
    evaluates greedily and "best" is the lowest greedy mean cycle change over the training kernels (held-out
    kernels never select). `log` gets a line every `cfg.log_interval` epochs and at the last."""
    _check_env(env, cfg)
    _check_spaces(env, policy, reference)
    train, held = _split(env, train_kernels, heldout_kernels)
    splits = {"train": train, "heldout": held}
    reference = copy.deepcopy(reference).eval().requires_grad_(False)
    policy.eval()  # dropout off: see the module docstring
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    rng, gen = random.Random(cfg.seed), torch.Generator().manual_seed(cfg.seed)

    row = {"epoch": 0, "temperature": None, **evaluate(env, policy, splits, cfg.max_steps), "best_epoch": 0}
    best = (row["train_mean_change"], 0, copy.deepcopy(policy.state_dict()))
    history = [row]
    t0 = time.perf_counter()
    for epoch in progress(range(1, cfg.epochs + 1), desc="grpo", unit="epoch"):
        temp = temperature(cfg, epoch)
        groups = collect_groups(env, policy, reference, train, cfg, temp, rng, gen)
        batch = decision_batch(env, groups, policy, reference, cfg.forced_step_in_loss, cfg.off_policy_ratio,
                               cfg.anchor, temp)
        try:
            stats = update(policy, opt, batch, cfg, epoch)
        except TrainingDivergedError as e:
            e.history = history  # the curves up to the last finite epoch, for a caller that keeps them
            raise
        row = {"epoch": epoch, "temperature": temp, **stats,
               "mean_reward": float(np.mean([r.reward for g in groups for r in g])),
               "anchor_reward": float(np.mean([g[0].reward for g in groups])),
               "elapsed_s": time.perf_counter() - t0, **evaluate(env, policy, splits, cfg.max_steps)}
        if row["train_mean_change"] < best[0]:
            best = (row["train_mean_change"], epoch, copy.deepcopy(policy.state_dict()))
        row["best_epoch"] = best[1]
        history.append(row)
        if log and cfg.log_interval and (epoch % cfg.log_interval == 0 or epoch == cfg.epochs):
            log(_log_line(row))
    return best[2], copy.deepcopy(policy.state_dict()), history


def write_curves(path: Path, history: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Wall-clock time stays out of the curves, so that a rerun reproduces them byte for byte.
    fields = sorted({k for h in history for k in h} - {"elapsed_s"}, key=lambda k: (k != "epoch", k))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(history)
