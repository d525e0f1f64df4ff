"""Behaviour cloning: the DA-GRPO warm start, a masked cross-entropy fit of greedy-search demonstrations.

A demonstration is one greedy step (chronos.search.strategies.greedy, one JSON line): {"kernel", "features"
(25; 52 in v2), "mask" (21), "history" (21), "action" (a name, "stop" included), ...}. Kernels, not steps, are
split into train and held-out, so held-out accuracy measures generalisation to unseen kernels. The returned
policy is the one of the best epoch (held-out accuracy, or train accuracy without a held-out set).
"""

from __future__ import annotations

import copy
import numbers
import random
from collections.abc import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F

from chronos.actions import SEED, STOP, ActionSpace, resolve_space
from chronos.config import BCConfig
from chronos.errors import TrainingError
from chronos.features.v2 import observed_features
from chronos.rl.policy import TransformPolicy


def split_kernels(kernels: Iterable[str], cfg: BCConfig,
                  heldout_kernels: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """(train, held-out) kernel names, deterministic for a seed: the explicit `heldout_kernels` (those
    present), else a seeded `cfg.heldout_fraction` of them."""
    names = sorted(set(kernels))
    if heldout_kernels is not None:
        held = sorted(set(heldout_kernels) & set(names))
    else:
        n = round(len(names) * cfg.heldout_fraction)
        held = sorted(random.Random(cfg.seed).sample(names, n)) if n else []
    return [k for k in names if k not in held], held


def _check_demos(demos: Sequence[dict], space: ActionSpace = SEED) -> None:
    """Demonstrations come from a file: a malformed one is bad data (TrainingError), not a crash. Their
    masks and histories must be as wide as `space` (a seed-space demo cannot teach a v2 policy)."""
    widths = {"features": len(observed_features(space)), "mask": space.size, "history": space.size}
    for i, d in enumerate(demos):
        if not isinstance(d, dict) or not isinstance(d.get("kernel"), str):
            raise TrainingError(f"demonstration {i}: not an object with a 'kernel' name")
        if d.get("action") not in space.index:
            raise TrainingError(f"demonstration {i} ({d['kernel']}): unknown action {d.get('action')!r}")
        for key, width in widths.items():
            v = d.get(key)
            if isinstance(v, str | bytes) or not hasattr(v, "__len__") or len(v) != width \
                    or not all(isinstance(x, numbers.Real) for x in v):
                raise TrainingError(f"demonstration {i} ({d['kernel']}): {key!r} must be {width} numbers")


def _tensors(demos: list[dict], space: ActionSpace = SEED) -> tuple[torch.Tensor, ...]:
    f = torch.tensor([d["features"] for d in demos], dtype=torch.float32)
    m = torch.tensor([d["mask"] for d in demos], dtype=torch.float32)
    h = torch.tensor([d["history"] for d in demos], dtype=torch.float32)
    y = torch.tensor([space.index[d["action"]] for d in demos], dtype=torch.long)
    return f, m, h, y


@torch.no_grad()
def _predict(policy: TransformPolicy, data) -> torch.Tensor:
    f, m, h, _ = data
    return policy.get_greedy_action(f, m, h) if len(f) else torch.zeros(0, dtype=torch.long)


def _accuracy(policy, data) -> float | None:
    if not len(data[3]):
        return None
    return float((_predict(policy, data) == data[3]).float().mean())


def confusion(policy, data) -> dict[str, dict[str, int]]:
    """true action -> predicted action -> count (only non-zero cells)."""
    out: dict[str, dict[str, int]] = {}
    names = policy.action_space.names
    for t, p in zip(data[3].tolist(), _predict(policy, data).tolist(), strict=True):
        row = out.setdefault(names[t], {})
        row[names[p]] = row.get(names[p], 0) + 1
    return out


def _datasets(demos: list[dict], cfg: BCConfig, heldout_kernels: Sequence[str] | None,
              space: ActionSpace = SEED):
    """(train kernels, held-out kernels, train tensors, held-out tensors), checked."""
    if not demos:
        raise TrainingError("behaviour cloning needs at least one demonstration")
    _check_demos(demos, space)
    train_k, held_k = split_kernels([d["kernel"] for d in demos], cfg, heldout_kernels)
    train = _tensors([d for d in demos if d["kernel"] in set(train_k)], space)
    held = _tensors([d for d in demos if d["kernel"] in set(held_k)] if held_k else [], space)
    if not len(train[3]):
        raise TrainingError("no training demonstrations left after holding out kernels")
    # a demo's action must be allowed by its own mask, or the masked cross-entropy would be infinite
    bad = (train[1].gather(1, train[3][:, None]).squeeze(1) < 0.5) & (train[3] != STOP)
    if bad.any():
        raise TrainingError(f"{int(bad.sum())} demonstrations choose an action their mask forbids")
    return train_k, held_k, train, held


def _epoch(policy: TransformPolicy, opt: torch.optim.Optimizer, train, gen: torch.Generator,
           batch_size: int) -> float:
    """One shuffled pass (dropout on); the mean loss per demonstration."""
    policy.train()
    total = 0.0
    for idx in torch.randperm(len(train[3]), generator=gen).split(batch_size):
        logits = policy(train[0][idx], train[1][idx], train[2][idx])
        # masked logits hold float32.min, so their softmax weight is exactly 0 (no -inf NaNs)
        loss = F.cross_entropy(logits, train[3][idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    policy.eval()
    return total / len(train[3])


def train_bc(demos: list[dict], cfg: BCConfig, heldout_kernels: Sequence[str] | None = None,
             log: Callable[[str], None] | None = None,
             action_space: ActionSpace | str = SEED) -> tuple[TransformPolicy, dict]:
    """Fit a TransformPolicy to `demos`; returns (policy of the best epoch, in eval mode; stats).

    `heldout_kernels`: the kernels never trained on (None: a seeded `cfg.heldout_fraction` of them).
    `log` gets one progress line per epoch. `action_space`: the policy's (params.yaml `actions`)."""
    space = resolve_space(action_space)
    train_k, held_k, train, held = _datasets(demos, cfg, heldout_kernels, space)
    torch.manual_seed(cfg.seed)
    policy = TransformPolicy(hidden=cfg.hidden, dropout=cfg.dropout, action_space=space)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    history, best_score, best_epoch, best_state = [], -1.0, 0, None
    for epoch in range(1, cfg.epochs + 1):
        loss = _epoch(policy, opt, train, gen, cfg.batch_size)
        row = {"epoch": epoch, "loss": loss, "train_acc": _accuracy(policy, train),
               "heldout_acc": _accuracy(policy, held)}
        history.append(row)
        score = row["heldout_acc"] if row["heldout_acc"] is not None else row["train_acc"]
        if score > best_score:  # strictly better: ties keep the earlier (less fitted) epoch
            best_score, best_epoch, best_state = score, epoch, copy.deepcopy(policy.state_dict())
        if log:
            log(f"bc epoch {epoch:3d} loss {row['loss']:.4f} train {row['train_acc']:.3f} "
                f"held-out {row['heldout_acc'] if row['heldout_acc'] is not None else '-'}")
    policy.load_state_dict(best_state)
    policy.eval()
    return policy, {
        "train_kernels": train_k, "heldout_kernels": held_k,
        "n_train": len(train[3]), "n_heldout": len(held[3]),
        "history": history, "best_epoch": best_epoch,
        "best_train_acc": history[best_epoch - 1]["train_acc"],
        "best_heldout_acc": history[best_epoch - 1]["heldout_acc"],
        "confusion_train": confusion(policy, train),
        "confusion_heldout": confusion(policy, held) if held_k else {},
    }
