"""How the policy reads a kernel and how it is decoded: one module for inference, GRPO's evaluation and the
optimize path, so that a raw PTX file and a training env go through the same observation, the same legality
rule and the same decoder.

Observation (67 float32) = 25 features of the current variant + 21 mask + 21 history (`observation`,
`split_obs`); in the v2 action space (chronos.actions) the features are observation v2's 52
(chronos.features.v2: the seed's 25 first, then launch, occupancy, loops, loads, ...) and the mask and the
history are 47 wide (146 floats).
A state is the canonical *set* of applied actions (chronos.search.space): any order of the same
actions is the same variant, the same PTX and the same store record.

The legality rule is a `Space` passed in explicitly (obs, mask, child per state). `KernelSpace` is the one
the project uses: an action is legal when the canonical realisation of state + action succeeds, so a
masked-in action always yields a variant that the measurement can realise; `ptxas_legality` (EnvConfig's)
decides whether register budgets are first checked by ptxas.

    greedy_decode([KernelSpace(parse(ptx))], policy, max_steps)   # one sequence per space, in lockstep
    beam_decode(KernelSpace(parse(ptx)), policy, k, max_steps)      # the k most probable distinct sets
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from chronos.actions import SEED, SPACES, STOP, ActionSpace, get_action_history, resolve_space
from chronos.errors import ChronosError, IllegalActionError
from chronos.features.v2 import observed_features, space_features
from chronos.search.space import canonical
from chronos.transforms import apply


def obs_dim(space: ActionSpace = SEED) -> int:
    """Width of an observation in `space`: its features + mask + history (67 seed, 146 v2)."""
    return len(observed_features(space)) + 2 * space.size


OBS_DIM = obs_dim(SEED)  # 67

Key = tuple[str, ...]


def observation(features: Sequence[float], mask: np.ndarray, applied: Iterable[str],
                space: ActionSpace = SEED) -> np.ndarray:
    """The policy's input for one state: features, mask, history, as one float32 vector."""
    return np.concatenate([np.asarray(features, dtype=np.float32), np.asarray(mask, dtype=np.float32),
                           np.asarray(get_action_history(applied, space), dtype=np.float32)],
                          ).astype(np.float32)


def split_obs(obs: torch.Tensor, space: ActionSpace | None = None) -> tuple[torch.Tensor, ...]:
    """(features, mask, history) of a (B, 67) batch of observations (B, 146 in v2): TransformPolicy's three
    inputs. Without `space`, the space whose observation has this width (each space's width is its own)."""
    if space is None:
        space = next((s for s in SPACES.values() if obs_dim(s) == obs.shape[-1]), None)
        if space is None:
            raise ChronosError(f"an observation of width {obs.shape[-1]} is no action space's (widths: "
                               f"{', '.join(f'{n} {obs_dim(s)}' for n, s in SPACES.items())})")
    nf = len(observed_features(space))
    m = nf + space.size
    return obs[:, :nf], obs[:, nf:m], obs[:, m:]


class Space(Protocol):
    """A legality rule over states: what the decoders need of it. A Space may name its `action_space`
    (chronos.actions; without one it is the seed's)."""

    def obs(self, key: Key) -> np.ndarray: ...  # the 67-float observation (146 in v2); mask part mask(key)

    def mask(self, key: Key) -> np.ndarray: ...  # 21 0/1 floats (47 in v2), stop always 1

    def child(self, key: Key, action: str) -> Key | None: ...  # the state after `action`; None: a conflict


class KernelSpace:
    """The variant space of one kernel: canonical set -> realised module, features, mask (all memoised), so
    rollouts pay for each transform once per set. `action_space` (a name or an ActionSpace) decides which
    actions the mask, the history and the observation cover, and which features it holds.

    v2's features also read `launch` (the kernel's KernelSpec: grid, block, shared bytes, scalars; None
    where the caller has none, e.g. a bare PTX file) and `ptxas_info(module)` (ptxas's registers/spills of
    that variant, or None; no callable: unknown). The seed space reads neither."""

    def __init__(self, root, ptxas_legality: bool = False, action_space: ActionSpace | str = SEED,
                 launch=None, ptxas_info=None):
        self.root = root
        self.launch = launch
        self.ptxas_info = ptxas_info
        self.defer = not ptxas_legality
        self.action_space = resolve_space(action_space)
        self._modules: dict[Key, object] = {(): root}
        self._obs: dict[Key, np.ndarray] = {}
        self._masks: dict[Key, np.ndarray] = {}

    def module(self, key: Key):
        """The variant of a canonical set, or None when some step of the canonical order is illegal."""
        if key in self._modules:
            return self._modules[key]
        parent = self.module(key[:-1])  # the prefix of a canonical tuple is canonical
        out = None
        if parent is not None:
            try:
                out = apply(parent, key[-1], defer_ptxas=self.defer)
            except IllegalActionError:
                out = None
        self._modules[key] = out
        return out

    def child(self, key: Key, action: str) -> Key | None:
        """canonical(key + action), or None when it conflicts with the set."""
        try:
            return canonical((*key, action))
        except IllegalActionError:
            return None

    def mask(self, key: Key) -> np.ndarray:
        """0/1 floats, one per action of the space: transforms whose canonical realisation with `key`
        succeeds, plus stop."""
        m = self._masks.get(key)
        if m is None:
            names = self.action_space.names
            m = np.zeros(len(names), dtype=np.float32)
            m[STOP] = 1.0
            for i, a in enumerate(names):
                if a == "stop" or a in key:
                    continue
                nxt = self.child(key, a)
                if nxt is not None and self.module(nxt) is not None:
                    m[i] = 1.0
            self._masks[key] = m
        return m

    def obs(self, key: Key) -> np.ndarray:
        """The observation of a state (cached; callers must not modify it)."""
        o = self._obs.get(key)
        if o is None:
            module = self.module(key)
            if module is None:
                raise ChronosError(f"state {'+'.join(key)} is not realisable in canonical order")
            info = self.ptxas_info(module) if self.ptxas_info is not None else None
            feats = space_features(module, self.action_space, self.launch, info)
            o = observation(feats, self.mask(key), key, self.action_space)
            self._obs[key] = o
        return o


@contextlib.contextmanager
def _eval_mode(policy: torch.nn.Module) -> Iterator[None]:
    """Dropout off and no gradients for the duration; the caller's training flag is restored after."""
    was_training = policy.training
    policy.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        policy.train(was_training)


def _logits(policy, obs: list[np.ndarray]) -> torch.Tensor:
    return policy(*split_obs(torch.from_numpy(np.stack(obs)), getattr(policy, "action_space", None)))


def _names(space: Space, policy) -> tuple[str, ...]:
    """The logits' names: the space's, which must be the policy's (a checkpoint of another space would
    read its outputs as other actions)."""
    ours = getattr(space, "action_space", SEED)
    theirs = getattr(policy, "action_space", ours)
    if theirs is not ours:
        raise ChronosError(f"a policy of the {theirs.name} action space cannot decode in the {ours.name} "
                           "space (params.yaml `actions` and the checkpoint disagree)")
    return ours.names


@dataclass(frozen=True)
class Decoded:
    sequence: tuple[str, ...]
    """The transforms in the order the policy chose them (stop excluded)."""
    key: Key
    """The final canonical set."""


def greedy_decode(spaces: Sequence[Space], policy, max_steps: int) -> list[Decoded]:
    """The policy's argmax rollout in each space, at most `max_steps` transforms; all spaces advance in
    lockstep (one batched forward per step)."""
    keys: list[Key] = [() for _ in spaces]
    seqs: list[list[str]] = [[] for _ in spaces]
    live = list(range(len(spaces)))
    names = [_names(sp, policy) for sp in spaces]
    with _eval_mode(policy):
        for _ in range(max_steps):
            if not live:
                break
            choices = _logits(policy, [spaces[i].obs(keys[i]) for i in live]).argmax(-1).tolist()
            nxt = []
            for i, a in zip(live, choices, strict=True):
                if a == STOP:
                    continue
                child = spaces[i].child(keys[i], names[i][a])
                if child is None:  # the space's own mask allowed it: a broken Space, not bad input
                    raise ValueError(f"{names[i][a]} is masked in after {keys[i]} but has no child state")
                keys[i] = child
                seqs[i].append(names[i][a])
                nxt.append(i)
            live = nxt
    return [Decoded(tuple(s), k) for s, k in zip(seqs, keys, strict=True)]


def _expand(space: Space, key: Key, base: float, row: np.ndarray, nxt: dict[Key, float],
            names: tuple[str, ...]) -> None:
    """Children of `key` scored base + log p(action), keeping the more probable path into a merged set."""
    for a in np.flatnonzero(space.mask(key)):
        if a == STOP:
            continue
        child = space.child(key, names[a])
        if child is None:
            continue
        s = base + float(row[a])
        if s > nxt.get(child, -np.inf):
            nxt[child] = s


def beam_decode(space: Space, policy, k: int, max_steps: int,
                width: int | None = None) -> list[tuple[Key, float]]:
    """The policy's k most probable distinct final sets, [(set, log-probability)] best first (the empty set =
    stop at once).

    Greedy decoding answers one sequence; an optimize path that may measure a few candidates does better with
    the k most probable *final sets* (two orders of one set are one variant). A finished candidate's score is
    the log-probability of its sequence including the stop (or of its `max_steps` transforms when cut off
    there); paths reaching one set merge, the more probable kept. `width` (default 2k) bounds the live beam.
    """
    width = width or 2 * k
    names = _names(space, policy)
    live: dict[Key, float] = {(): 0.0}
    done: dict[Key, float] = {}
    with _eval_mode(policy):
        for step in range(max_steps + 1):
            if not live:
                break
            keys = list(live)
            logp = torch.log_softmax(_logits(policy, [space.obs(key) for key in keys]), -1).numpy()
            nxt: dict[Key, float] = {}
            for key, row in zip(keys, logp, strict=True):
                stop_score = live[key] + (float(row[STOP]) if step < max_steps else 0.0)
                if stop_score > done.get(key, -np.inf):
                    done[key] = stop_score
                if step < max_steps:
                    _expand(space, key, live[key], row, nxt, names)
            best_done = sorted(done.values(), reverse=True)[:k]
            floor = best_done[-1] if len(best_done) == k else -np.inf
            # a live state's score only falls as it grows: prune those already below the k-th finished one
            live = dict(sorted(((c, s) for c, s in nxt.items() if s > floor), key=lambda t: -t[1])[:width])
    return sorted(done.items(), key=lambda t: -t[1])[:k]
