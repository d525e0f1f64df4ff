"""Behaviour cloning: the DA-GRPO warm start, a masked cross-entropy fit of greedy-search demonstrations.

A demonstration is one greedy step (chronos.search.strategies.greedy, one JSON line): {"kernel",
"features" (25), "mask" (21), "history" (21), "action" (a name, "stop" included), ...}. Kernels, not steps,
are split into train and held-out, so held-out accuracy measures generalisation to unseen kernels. The
returned policy is the one of the best epoch (held-out accuracy, or train accuracy without a held-out set).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from chronos.actions import ACTION_INDEX, ACTION_NAMES
from chronos.rl.policy import TransformPolicy


@dataclass
class BCArgs:
    epochs: int = 50
    """Passes over the training demonstrations (the seed's 50)."""
    lr: float = 1e-3
    """Adam learning rate."""
    batch_size: int = 64
    """Demonstrations per gradient step."""
    weight_decay: float = 1e-4
    """Adam (L2) weight decay."""
    seed: int = 0
    """Seeds the initial weights, the kernel split and the batch order."""
    heldout_fraction: float = 0.25
    """Fraction of the demonstrations' kernels held out (ignored when heldout_kernels is given)."""
    heldout_kernels: list[str] | None = None
    """Explicit held-out kernel names; the other kernels train."""
    hidden: int = 128
    """Hidden width of the policy MLP."""
    dropout: float = 0.1
    """Dropout after each hidden layer (on while training, off for accuracy)."""
    log: object = field(default=None, repr=False)
    """Optional callable(str) for one progress line per epoch."""


def split_kernels(kernels: list[str], args: BCArgs) -> tuple[list[str], list[str]]:
    """(train, held-out) kernel names, deterministic for a seed."""
    names = sorted(set(kernels))
    if args.heldout_kernels is not None:
        held = sorted(set(args.heldout_kernels) & set(names))
    else:
        n = round(len(names) * args.heldout_fraction)
        held = sorted(random.Random(args.seed).sample(names, n)) if n else []
    return [k for k in names if k not in held], held


def _tensors(demos: list[dict]) -> tuple[torch.Tensor, ...]:
    f = torch.tensor([d["features"] for d in demos], dtype=torch.float32)
    m = torch.tensor([d["mask"] for d in demos], dtype=torch.float32)
    h = torch.tensor([d["history"] for d in demos], dtype=torch.float32)
    y = torch.tensor([ACTION_INDEX[d["action"]] for d in demos], dtype=torch.long)
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
    for t, p in zip(data[3].tolist(), _predict(policy, data).tolist(), strict=True):
        row = out.setdefault(ACTION_NAMES[t], {})
        row[ACTION_NAMES[p]] = row.get(ACTION_NAMES[p], 0) + 1
    return out


def train_bc(demos: list[dict], args: BCArgs) -> tuple[TransformPolicy, dict]:
    """Fit a TransformPolicy to `demos`; returns (policy of the best epoch, in eval mode; stats)."""
    if not demos:
        raise ValueError("behaviour cloning needs at least one demonstration")
    train_k, held_k = split_kernels([d["kernel"] for d in demos], args)
    train = _tensors([d for d in demos if d["kernel"] in set(train_k)])
    held = _tensors([d for d in demos if d["kernel"] in set(held_k)]) if held_k else _tensors([])
    if not len(train[3]):
        raise ValueError("no training demonstrations left after holding out kernels")
    # a demo's action must be allowed by its own mask, or the masked cross-entropy would be infinite
    bad = (train[1].gather(1, train[3][:, None]).squeeze(1) < 0.5) & (train[3] != ACTION_INDEX["stop"])
    if bad.any():
        raise ValueError(f"{int(bad.sum())} demonstrations choose an action their mask forbids")

    torch.manual_seed(args.seed)
    policy = TransformPolicy(hidden=args.hidden, dropout=args.dropout)
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    gen = torch.Generator().manual_seed(args.seed)
    n = len(train[3])
    history, best_score, best_epoch, best_state = [], -1.0, 0, None
    for epoch in range(1, args.epochs + 1):
        policy.train()
        total = 0.0
        for idx in torch.randperm(n, generator=gen).split(args.batch_size):
            logits = policy(train[0][idx], train[1][idx], train[2][idx])
            # masked logits hold float32.min, so their softmax weight is exactly 0 (no -inf NaNs)
            loss = F.cross_entropy(logits, train[3][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        policy.eval()
        row = {"epoch": epoch, "loss": total / n, "train_acc": _accuracy(policy, train),
               "heldout_acc": _accuracy(policy, held)}
        history.append(row)
        score = row["heldout_acc"] if row["heldout_acc"] is not None else row["train_acc"]
        if score > best_score:  # strictly better: ties keep the earlier (less fitted) epoch
            best_score, best_epoch, best_state = score, epoch, copy.deepcopy(policy.state_dict())
        if args.log:
            args.log(f"bc epoch {epoch:3d} loss {row['loss']:.4f} train {row['train_acc']:.3f} "
                     f"held-out {row['heldout_acc'] if row['heldout_acc'] is not None else '-'}")
    policy.load_state_dict(best_state)
    policy.eval()
    stats = {
        "train_kernels": train_k, "heldout_kernels": held_k,
        "n_train": n, "n_heldout": len(held[3]),
        "history": history, "best_epoch": best_epoch,
        "best_train_acc": history[best_epoch - 1]["train_acc"],
        "best_heldout_acc": history[best_epoch - 1]["heldout_acc"],
        "confusion_train": confusion(policy, train),
        "confusion_heldout": confusion(policy, held) if held_k else {},
    }
    return policy, stats
