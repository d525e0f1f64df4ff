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

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from chronos.actions import STOP, ActionSpace
from chronos.config_timing import HeldoutConfig
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
    """From a census step's candidates ({action, valid, ratio, verdict}); invalid ones stay masked."""
    n = space.size
    reward, gain = np.full(n, np.nan), np.full(n, np.nan)
    reward[STOP] = gain[STOP] = 0.0
    for c in candidates:
        if c.get("valid") and c.get("ratio"):
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
