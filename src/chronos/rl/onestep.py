"""The one-step decision learned from a census (#14): which single action of the space, or stop.

A census kernel (chronos.stages.headroom, step 0) holds every legal single action's measured time ratio to
the baseline, all from one side-by-side comparison. So each action's outcome is a recorded fact, and a
policy can be trained and scored on them with nothing estimated:

  reward  log(time_before / time_after) = -log(ratio), signed, for any legal action; stop is 0
  gain    what deploys: -log(ratio) when its verdict was `faster`, else 0 (the baseline stays)

Training is the seed's recipe cut to one step: behaviour cloning of each training kernel's best action
(where one was faster: `train_bc` says why the others are left out), then GRPO — per epoch and kernel a
group of sampled actions, advantages relative to the group (chronos.rl.grpo.advantages), the clipped
surrogate with a KL term towards the BC policy (chronos.rl.grpo.grpo_loss). One update per epoch from the
current policy, so the #6 collapse (forced first steps entering the loss with off-policy ratios) has no path
in here: every sample is drawn by the policy being updated.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from chronos.actions import STOP, ActionSpace
from chronos.config import HeldoutConfig
from chronos.rl.decode import split_obs
from chronos.rl.grpo import advantages, grpo_loss
from chronos.rl.policy import TransformPolicy


@dataclass
class Decision:
    """One kernel's one-step decision: its observation (features, mask of the census's measured actions
    plus stop, empty history) and per action index the signed reward and the deploy gain (NaN: not legal)."""

    kernel: str
    family: str
    obs: np.ndarray
    reward: np.ndarray
    gain: np.ndarray
    extra: dict = field(default_factory=dict)


def decision(kernel: str, family: str, features: np.ndarray, candidates: list[dict],
             space: ActionSpace) -> Decision:
    """From a census step's candidates ({action, valid, ratio, verdict}); invalid ones, and actions outside
    `space`, stay masked."""
    n = space.size
    reward, gain = np.full(n, np.nan), np.full(n, np.nan)
    reward[STOP] = gain[STOP] = 0.0
    for c in candidates:  # a census of a larger space: its other actions are not this space's to choose
        if c.get("valid") and c.get("ratio") and c["action"] in space.index:
            i = space.index[c["action"]]
            reward[i] = -math.log(c["ratio"])
            gain[i] = reward[i] if c.get("verdict") == "faster" else 0.0
    mask = (~np.isnan(reward)).astype(np.float32)
    obs = np.concatenate([np.asarray(features, np.float32), mask, np.zeros(n, np.float32)])
    return Decision(kernel, family, obs, reward, gain)


def best_action(d: Decision) -> int:
    """The measured best: the largest deploy gain; stop when nothing was faster (a tie at gain 0 is stop,
    not the lowest-index action that also deploys nothing)."""
    gain = np.where(np.isnan(d.gain), -np.inf, d.gain)
    best = int(np.argmax(gain))
    return STOP if gain[best] <= gain[STOP] else best


def _logits(policy: TransformPolicy, obs: torch.Tensor) -> torch.Tensor:
    return policy(*split_obs(obs, policy.action_space))


def train_bc(decisions: list[Decision], cfg: HeldoutConfig, space: ActionSpace) -> TransformPolicy:
    """Behaviour cloning of the measured best action where one was faster. A kernel where none was holds
    no demonstration: its legal actions tie at deploy gain 0 with stop (the optimize path keeps the
    baseline unless a pick is faster), so a stop label there would teach stopping, which never deploys
    more than trying does. GRPO still sees those kernels through their signed rewards."""
    torch.manual_seed(cfg.seed)
    policy = TransformPolicy(hidden=cfg.hidden, dropout=0.0, action_space=space)
    demos = [(d.obs, best_action(d)) for d in decisions if best_action(d) != STOP]
    if not demos:
        return policy
    obs = torch.tensor(np.stack([o for o, _ in demos]))
    target = torch.tensor([a for _, a in demos])
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.bc_lr)
    for _ in range(cfg.bc_epochs):
        loss = torch.nn.functional.cross_entropy(_logits(policy, obs), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return policy


def choose(policy: TransformPolicy, decisions: list[Decision], k: int = 1) -> list[list[int]]:
    """Per decision the policy's k most likely legal actions, most likely first (greedy decode: k=1)."""
    if not decisions:
        return []
    with torch.no_grad():
        logits = _logits(policy.eval(), torch.tensor(np.stack([d.obs for d in decisions])))
    legal = logits > torch.finfo(torch.float32).min
    top = torch.topk(logits, k=min(k, logits.shape[1]), dim=1).indices
    return [[int(a) for a in row if legal[i, a]] for i, row in enumerate(top)]


def deployed_gain(d: Decision, picks: list[int]) -> float:
    """Of k measured picks the best deploys (the optimize path with beam k keeps the fastest verified)."""
    return max((float(d.gain[a]) for a in picks if not np.isnan(d.gain[a])), default=0.0)


def train_grpo(policy: TransformPolicy, decisions: list[Decision], cfg: HeldoutConfig,
               probe=None) -> tuple[TransformPolicy, list[dict]]:
    """GRPO on one-step decisions, `cfg.epochs` updates; `probe(policy)` -> dict is logged every epoch with
    the batch's mean reward, the KL to the reference and the policy's entropy (the curves)."""
    reference = TransformPolicy(hidden=cfg.hidden, dropout=0.0, action_space=policy.action_space)
    reference.load_state_dict(policy.state_dict())
    reference.eval()
    obs = torch.tensor(np.stack([d.obs for d in decisions]))
    rewards = torch.tensor(np.stack([np.nan_to_num(d.reward, nan=0.0) for d in decisions]))
    with torch.no_grad():
        ref_all = torch.log_softmax(_logits(reference, obs), -1)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    curves = []
    for epoch in range(cfg.epochs):
        policy.eval()
        with torch.no_grad():
            logp_all = torch.log_softmax(_logits(policy, obs) / cfg.temperature, -1)
            acts = torch.multinomial(logp_all.exp(), cfg.group, replacement=True, generator=gen)
        r = rewards.gather(1, acts)
        adv = torch.tensor(advantages(r.tolist()), dtype=torch.float32).reshape(-1)
        rows = obs.repeat_interleave(cfg.group, 0)
        flat = acts.reshape(-1)
        old = logp_all.repeat_interleave(cfg.group, 0).gather(1, flat[:, None]).squeeze(1)
        policy.train()
        loss, _, kl, clip = grpo_loss(policy, rows, flat, adv, old, ref_all.repeat_interleave(cfg.group, 0),
                                      cfg.clip_eps, cfg.beta)
        opt.zero_grad()
        loss.backward()
        opt.step()
        p = logp_all.exp()
        entropy = float(-(torch.where(p > 0, p * logp_all, torch.zeros_like(p))).sum(-1).mean())
        curves.append({"epoch": epoch, "reward": float(r.mean()), "kl": float(kl), "clip_frac": float(clip),
                       "entropy": entropy, **(probe(policy) if probe else {})})
    return policy.eval(), curves


def summed_gain(policy: TransformPolicy, decisions: list[Decision]) -> float:
    """What the policy's greedy choices deploy, summed over `decisions`."""
    return float(sum(deployed_gain(d, p) for d, p in zip(decisions, choose(policy, decisions), strict=True)))


def train_stopped(decisions: list[Decision], cfg: HeldoutConfig, space: ActionSpace, stop: int,
                  probe=None) -> tuple[TransformPolicy, list[dict]]:
    """BC then all `cfg.epochs` of GRPO (the curves cover them), returning the policy as it was after
    `stop` GRPO updates (0: the BC policy): early stopping that still shows the whole run."""
    policy = train_bc(decisions, cfg, space)
    kept = [copy.deepcopy(policy.state_dict())]
    done = [0]

    def probe_and_keep(p):
        done[0] += 1
        if done[0] == stop:
            kept[0] = copy.deepcopy(p.state_dict())
        return probe(p) if probe else {}

    policy, curves = train_grpo(policy, decisions, cfg, probe_and_keep)
    policy.load_state_dict(kept[0])
    return policy.eval(), curves


def gains_by_setting(train: list[Decision], test: list[Decision], cfg: HeldoutConfig, space: ActionSpace,
                     bc_epochs: list[int], stops: list[int]) -> dict[tuple[int, int], float]:
    """(BC epochs, GRPO stop epoch) -> the greedy choices' summed gain on `test`: one GRPO run per BC
    setting (max(stops) epochs), its policy scored after each stop epoch (0: before GRPO)."""
    out = {}
    for b in bc_epochs:
        c = dataclasses.replace(cfg, bc_epochs=b, epochs=max(max(stops), 1))
        policy = train_bc(train, c, space)
        out[(b, 0)] = summed_gain(policy, test)
        done = [0]

        def probe(p, b=b, done=done):
            done[0] += 1
            if done[0] in stops:
                out[(b, done[0])] = summed_gain(p, test)
            return {}

        train_grpo(policy, train, c, probe)
    return out


def select_by_inner_folds(train: list[Decision], cfg: HeldoutConfig,
                          space: ActionSpace) -> tuple[tuple[int, int], dict[tuple[int, int], float]]:
    """Model selection without the held-out workload: leave one training family out in turn, score every
    (BC epochs, stop epoch) of `cfg.select_bc_epochs` x `cfg.select_stops` on it, and keep the pair with
    the largest gain summed over these inner folds (ties: fewer BC epochs, then the earlier stop)."""
    inner: dict[tuple[int, int], float] = {}
    families = list(dict.fromkeys(d.family for d in train))
    if len(families) < 2:  # nothing to hold out inside: the configured setting
        return (cfg.bc_epochs, cfg.epochs), inner
    stops = sorted({min(s, cfg.epochs) for s in cfg.select_stops})  # train_stopped runs `epochs`, no more
    for val in families:
        got = gains_by_setting([d for d in train if d.family != val], [d for d in train if d.family == val],
                               cfg, space, cfg.select_bc_epochs, stops)
        for k, v in got.items():
            inner[k] = inner.get(k, 0.0) + v
    return max(sorted(inner), key=lambda k: inner[k]), inner
