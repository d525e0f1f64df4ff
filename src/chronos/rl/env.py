"""TransformEnv: one episode = pick up to 6 PTX transforms for one kernel, rewarded by the measured speed-up.

Gymnasium API (subclasses `gymnasium.Env` and uses its spaces when gymnasium is installed; otherwise the
same methods with small stand-in space descriptors):

    obs, info = env.reset(seed=0, options={"kernel": "gemm_tile(4,6,8)"})
    obs, reward, terminated, truncated, info = env.step(action)

obs (67 float32) = 25 features of the *current* (transformed) kernel + 21 mask + 21 history. The mask is also
in `info["action_mask"]` and `env.action_masks()`. `stop` terminates; the 6th transform truncates. The
reward is 0 on intermediate steps and, at the end, log(cycles_baseline / cycles_final) minus an optional
per-transform cost; an invalid final variant gets `invalid_penalty` and `info["invalid_reason"]` says why.

A state is the canonical *set* of applied actions (chronos.search.space), so any order of the same actions
is the same variant, the same PTX and the same store record. `KernelSpace` caches, per kernel and set, the
realised module, its features and its mask, so rollouts (and DA-GRPO's thousands of them) only pay for
transforms once per set. An action is legal in a state when the canonical realisation of state + action
succeeds, which keeps the mask and the realisation consistent (a masked-in action always yields a variant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from chronos.actions import ACTION_NAMES, NUM_ACTIONS, STOP, get_action_history
from chronos.errors import ChronosError, IllegalActionError
from chronos.features import NUM_FEATURES, extract_features
from chronos.search.base import Evaluator, Outcome
from chronos.search.space import canonical
from chronos.transforms import TRANSFORM_NAMES, apply

try:  # optional: the API is the same either way
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - depends on the environment
    _gym = None
    _spaces = None

OBS_DIM = NUM_FEATURES + 2 * NUM_ACTIONS  # 67


@dataclass
class EnvConfig:
    """Episode and reward settings (stages fill them from params.yaml)."""

    max_steps: int = 6
    """Most transforms per episode; the episode is truncated after this many (the seed's 6)."""
    step_cost: float = 0.0
    """Subtracted from the terminal reward once per applied transform (0 = the seed's outcome-only reward)."""
    invalid_penalty: float = -1.0
    """Terminal reward when the final variant is invalid (wrong output, ptxas refusal, no cycles, ...)."""
    ptxas_legality: bool = False
    """Ask ptxas whether a register budget is accepted when building the mask (slow: one ptxas run per budget
    per state). Off: budgets are legal by construction and a ptxas refusal shows up as an invalid variant,
    exactly as the exhaustive atlas records it."""


class KernelSpace:
    """The variant space of one kernel: canonical set -> realised module, features, mask (all memoised)."""

    def __init__(self, root, ptxas_legality: bool = False):
        self.root = root
        self.defer = not ptxas_legality
        self._modules: dict[tuple[str, ...], object] = {(): root}
        self._obs: dict[tuple[str, ...], np.ndarray] = {}
        self._masks: dict[tuple[str, ...], np.ndarray] = {}

    def module(self, key: tuple[str, ...]):
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

    def child(self, key: tuple[str, ...], action: str) -> tuple[str, ...] | None:
        """canonical(key + action), or None when it conflicts with the set."""
        try:
            return canonical((*key, action))
        except IllegalActionError:
            return None

    def mask(self, key: tuple[str, ...]) -> np.ndarray:
        """21 0/1 floats: transforms whose canonical realisation with `key` succeeds, plus stop."""
        m = self._masks.get(key)
        if m is None:
            m = np.zeros(NUM_ACTIONS, dtype=np.float32)
            m[STOP] = 1.0
            for i, a in enumerate(TRANSFORM_NAMES):  # TRANSFORM_NAMES is ACTION_NAMES without the final stop
                if a in key:
                    continue
                nxt = self.child(key, a)
                if nxt is not None and self.module(nxt) is not None:
                    m[i] = 1.0
            self._masks[key] = m
        return m

    def obs(self, key: tuple[str, ...]) -> np.ndarray:
        """The 67-float observation of a state (cached; callers must not modify it)."""
        o = self._obs.get(key)
        if o is None:
            module = self.module(key)
            if module is None:
                raise ChronosError(f"state {'+'.join(key)} is not realisable in canonical order")
            o = np.concatenate([np.asarray(extract_features(module), dtype=np.float32), self.mask(key),
                                np.asarray(get_action_history(key), dtype=np.float32)]).astype(np.float32)
            self._obs[key] = o
        return o


class _Box:  # stand-ins for gymnasium.spaces when gymnasium is absent
    def __init__(self, shape):
        self.shape, self.dtype = shape, np.float32


class _Discrete:
    def __init__(self, n):
        self.n = n

    def contains(self, x) -> bool:
        return 0 <= int(x) < self.n


class TransformEnv(_gym.Env if _gym is not None else object):
    """Episodes over a fixed set of kernels measured through `backend` (gpu, replay or a test stand-in).

    `kernels` maps a kernel name to (KernelSpec, root Module). One Evaluator per kernel caches outcomes per
    canonical set for the life of the env, so a variant is measured (or replayed) once.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, kernels: dict, backend, config: EnvConfig | None = None):
        if not kernels:
            raise ValueError("TransformEnv needs at least one kernel")
        self.kernels = dict(kernels)
        self.backend = backend
        self.config = config or EnvConfig()
        self.names = sorted(self.kernels)
        if _spaces is not None:
            self.observation_space = _spaces.Box(-np.inf, np.inf, shape=(OBS_DIM,), dtype=np.float32)
            self.action_space = _spaces.Discrete(NUM_ACTIONS)
        else:
            self.observation_space, self.action_space = _Box((OBS_DIM,)), _Discrete(NUM_ACTIONS)
        self._spaces: dict[str, KernelSpace] = {}
        self._evaluators: dict[str, Evaluator] = {}
        self._rng = np.random.default_rng()
        self.kernel: str | None = None
        self.key: tuple[str, ...] = ()
        self.sequence: list[str] = []

    # -- shared with the batched trainer -------------------------------------------------------------------
    def space(self, kernel: str) -> KernelSpace:
        if kernel not in self._spaces:
            self._spaces[kernel] = KernelSpace(self.kernels[kernel][1], self.config.ptxas_legality)
        return self._spaces[kernel]

    def evaluator(self, kernel: str) -> Evaluator:
        if kernel not in self._evaluators:
            spec, root = self.kernels[kernel]
            self._evaluators[kernel] = Evaluator(spec, root, self.backend)
        return self._evaluators[kernel]

    def baseline(self, kernel: str) -> Outcome:
        base = self.evaluate(kernel, [()])[0]
        if not base.valid:
            raise ChronosError(f"{kernel}: the baseline itself is invalid ({base.reason}); it cannot be a "
                               "reference for rewards")
        return base

    def evaluate(self, kernel: str, keys: list[tuple[str, ...]]) -> list[Outcome]:
        """Outcomes of canonical sets, measured in one backend call (variants come from the cache)."""
        sp = self.space(kernel)
        mods = {k: sp.module(k) for k in keys}
        outs = self.evaluator(kernel).evaluate(list(keys), modules={k: m for k, m in mods.items() if m})
        return [o if o is not None else Outcome(k, False, reason="illegal_in_order")
                for k, o in zip(keys, outs, strict=True)]

    def rewards(self, kernel: str, keys: list[tuple[str, ...]]) -> list[tuple[float, Outcome]]:
        """Terminal (reward, outcome) for each final set: log(c_base / c_final) - step_cost * |set|."""
        base = self.baseline(kernel)
        out = []
        for k, o in zip(keys, self.evaluate(kernel, keys), strict=True):
            if o.valid:
                r = math.log(base.cycles / o.cycles) - self.config.step_cost * len(k)
            else:
                r = self.config.invalid_penalty
            out.append((r, o))
        return out

    # -- Gymnasium API -------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        kernel = (options or {}).get("kernel")
        if kernel is None:  # no kernel named: a uniformly random one
            kernel = self.names[int(self._rng.integers(len(self.names)))]
        if kernel not in self.kernels:
            raise KeyError(f"unknown kernel {kernel!r}; this env has {len(self.names)}: {', '.join(self.names)}")
        self.kernel, self.key, self.sequence = kernel, (), []
        return self.space(kernel).obs(()).copy(), self._info()

    def action_masks(self) -> np.ndarray:
        """The 0/1 mask of the current state (for maskable-policy libraries)."""
        return self.space(self.kernel).mask(self.key).copy()

    def step(self, action: int):
        if self.kernel is None:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        if not (0 <= action < NUM_ACTIONS) or self.action_masks()[action] < 0.5:
            raise ValueError(f"action {action} ({ACTION_NAMES[action] if 0 <= action < NUM_ACTIONS else '?'}) "
                             f"is masked out after {self.sequence or '(nothing)'} on {self.kernel}")
        sp = self.space(self.kernel)
        terminated = action == STOP
        if not terminated:
            name = ACTION_NAMES[action]
            self.key = sp.child(self.key, name)
            self.sequence.append(name)
        truncated = not terminated and len(self.sequence) >= self.config.max_steps
        reward, info = 0.0, self._info()
        if terminated or truncated:
            reward, outcome = self.rewards(self.kernel, [self.key])[0]
            base = self.baseline(self.kernel)
            info.update(baseline_cycles=base.cycles, final_cycles=outcome.cycles, valid=outcome.valid)
            if not outcome.valid:
                info["invalid_reason"] = outcome.reason or "invalid"
        return sp.obs(self.key).copy(), float(reward), terminated, truncated, info

    def _info(self) -> dict:
        return {"kernel": self.kernel, "action_mask": self.action_masks(), "applied": tuple(self.key),
                "sequence": list(self.sequence)}
