"""TransformPolicy: the seed's masked MLP over 25 features + 21 mask + 21 history (67 inputs).

    Linear(67, 128) -> ReLU -> Dropout(0.1) -> Linear(128, 128) -> ReLU -> Dropout(0.1) -> Linear(128, 21)

then masked softmax. The mask and the history are inputs as well as the mask being applied to the logits,
exactly as in the seed, so that a checkpoint trained there has the same meaning here.
27,925 parameters (the seed calls it "~20K").

Every method accepts one observation as 1-D tensors (25,), (21,), (21,) — the seed's Programmatic Usage —
or a batch as (B, 25), (B, 21), (B, 21).

The action space (chronos.actions: params.yaml's `actions`) sets the head and the input: the seed's 21 logits
over the seed's 25 features, or v2's 47 logits over observation v2's 52 features (chronos.features.v2; then
52 + 2 * 47 = 146 inputs). `policy.action_space` says which; checkpoints record it and the feature names.
"""

from __future__ import annotations

import torch
from torch import nn

from chronos.actions import SEED, STOP, ActionSpace, resolve_space
from chronos.features.seed import NUM_FEATURES
from chronos.features.v2 import observed_features

# Masked logits get the most negative finite float instead of -inf: softmax then gives them exactly 0
# probability, and a fully masked row (impossible while stop is forced on) can still not produce NaNs.
_MASKED = torch.finfo(torch.float32).min


def state_shapes(hidden: int, n_features: int = NUM_FEATURES,
                 n_actions: int = SEED.size) -> dict[str, tuple[int, ...]]:
    """The state dict's key -> shape of `TransformPolicy(hidden)` (with `n_actions` logits), without building
    it (checkpoints are checked against this before any allocation)."""
    n_in = n_features + 2 * n_actions
    return {"net.0.weight": (hidden, n_in), "net.0.bias": (hidden,), "net.3.weight": (hidden, hidden),
            "net.3.bias": (hidden,), "net.6.weight": (n_actions, hidden), "net.6.bias": (n_actions,)}


class TransformPolicy(nn.Module):
    """The seed's policy network. `net` is the nn.Sequential whose state-dict keys checkpoints store."""

    def __init__(self, hidden: int = 128, n_features: int | None = None, n_actions: int | None = None,
                 dropout: float = 0.1, action_space: ActionSpace | str = SEED):
        super().__init__()
        self.action_space = resolve_space(action_space)
        self.feature_names = observed_features(self.action_space)
        """The features this policy reads, in input order (the space's observation)."""
        if n_features is not None and n_features != len(self.feature_names):
            raise ValueError(f"n_features={n_features} but the {self.action_space.name} space observes "
                             f"{len(self.feature_names)} features")
        n_features = len(self.feature_names)
        if n_actions is not None and n_actions != self.action_space.size:
            raise ValueError(f"n_actions={n_actions} but the {self.action_space.name} space has "
                             f"{self.action_space.size} actions")
        n_actions = self.action_space.size
        self.hidden = hidden
        self.n_features = n_features
        self.n_actions = n_actions
        self.net = nn.Sequential(
            nn.Linear(n_features + 2 * n_actions, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, n_actions),
        )

    def _prep(self, features, mask, history):
        """As float tensors with a batch dimension; also whether the input was a single observation."""
        f, m, h = (torch.as_tensor(x, dtype=torch.float32) for x in (features, mask, history))
        single = f.dim() == 1
        if single:
            f, m, h = f.unsqueeze(0), m.unsqueeze(0), h.unsqueeze(0)
        if f.shape[-1] != self.n_features or m.shape[-1] != self.n_actions or h.shape[-1] != self.n_actions:
            raise ValueError(f"expected features/mask/history of width {self.n_features}/{self.n_actions}/"
                             f"{self.n_actions}, got {f.shape[-1]}/{m.shape[-1]}/{h.shape[-1]}")
        return f, m, h, single

    def _masked_logits(self, f, m, h):
        logits = self.net(torch.cat([f, m, h], dim=-1))
        allowed = m > 0.5
        allowed[..., STOP] = True  # stop is always available, whatever the caller's mask says
        return logits.masked_fill(~allowed, _MASKED)

    def forward(self, features, mask, history) -> torch.Tensor:
        """Masked logits, shaped like the mask: disallowed actions hold the most negative float32."""
        f, m, h, single = self._prep(features, mask, history)
        out = self._masked_logits(f, m, h)
        return out.squeeze(0) if single else out

    def distribution(self, features, mask, history, temperature: float = 1.0):
        """The masked categorical distribution over the actions (logits divided by `temperature`)."""
        if temperature <= 0:
            raise ValueError("temperature must be > 0 (use get_greedy_action for argmax)")
        return torch.distributions.Categorical(logits=self.forward(features, mask, history) / temperature)

    def get_greedy_action(self, features, mask, history) -> int | torch.Tensor:
        """Argmax over allowed actions, without gradients and with dropout off.

        Dropout is disabled for this call only; the module's training flag is restored afterwards, so a
        training loop may call it. Returns an int for a single observation, a (B,) long tensor for a batch.
        """
        was_training = self.training
        try:
            self.eval()
            with torch.no_grad():
                logits = self.forward(features, mask, history)
        finally:
            self.train(was_training)
        action = logits.argmax(dim=-1)
        return int(action) if action.dim() == 0 else action

    def sample_action(self, features, mask, history, generator: torch.Generator | None = None,
                      temperature: float = 1.0) -> tuple[int, torch.Tensor]:
        """Sample one action for a single observation: (action index, its log-probability, with grad).

        Uses the module's current mode (dropout is active in training mode, as in the seed's rollouts).
        `generator` makes the draw reproducible without touching the global RNG.
        """
        dist = self.distribution(features, mask, history, temperature)
        if dist.probs.dim() != 1:
            raise ValueError("sample_action takes one observation; use distribution() for batches")
        idx = torch.multinomial(dist.probs.detach(), 1, generator=generator).squeeze(0)
        return int(idx), dist.log_prob(idx)

    def log_prob(self, features, mask, history, actions, temperature: float = 1.0) -> torch.Tensor:
        """Log-probabilities of `actions` ((B,) ints, or one int) under the masked policy, with grad."""
        dist = self.distribution(features, mask, history, temperature)
        return dist.log_prob(torch.as_tensor(actions, dtype=torch.long))
