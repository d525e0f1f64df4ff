"""TransformEnv: one episode = pick up to 6 PTX transforms for one kernel, rewarded by the measured speed-up.

A `gymnasium.Env`:

    obs, info = env.reset(seed=0, options={"kernel": "gemm_tile(4,6,8)"})
    obs, reward, terminated, truncated, info = env.step(action)

obs (67 float32, the layout of chronos.rl.decode) = 25 features of the *current* (transformed) kernel + 21
mask + 21 history (v2: observation v2's 52 features, with the kernel's KernelSpec as its launch, + 47 + 47).
The mask is also in `info["action_mask"]` and `env.action_masks()`. `stop` terminates; the 6th transform
truncates. The reward is 0 on intermediate steps and, at the end, log(cycles_baseline / cycles_final) minus an
optional per-transform cost; an invalid final variant gets `invalid_penalty` and `info["invalid_reason"]` says
why.

States, masks and observations come from one `KernelSpace` per kernel (chronos.rl.decode: canonical sets,
memoised), the same legality rule the decoders and inference use. `action_space` (params.yaml's `actions`;
the seed's by default) sets the Discrete action space and the mask's and history's width.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from chronos.actions import SEED, STOP, ActionSpace, resolve_space
from chronos.config import EnvConfig
from chronos.errors import TrainingError
from chronos.kernels.spec import load_module, load_specs
from chronos.rl.decode import OBS_DIM, KernelSpace, obs_dim
from chronos.search.base import CycleEvaluator, Outcome

__all__ = ["OBS_DIM", "EnvConfig", "KernelSpace", "TransformEnv"]


class TransformEnv(gymnasium.Env):
    """Episodes over a fixed set of kernels measured through `backend` (gpu, replay or a test stand-in).

    `kernels` maps a kernel name to (KernelSpec, root Module). One CycleEvaluator per kernel caches outcomes
    per canonical set for the life of the env, so a variant is measured (or replayed) once.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, kernels: dict, backend, config: EnvConfig | None = None,
                 action_space: ActionSpace | str = SEED):
        if not kernels:
            raise TrainingError("TransformEnv needs at least one kernel")
        self.kernels = dict(kernels)
        self.backend = backend
        self.config = config or EnvConfig()
        self.names = sorted(self.kernels)
        self.actions = resolve_space(action_space)
        """The chronos action space (`action_space` is Gymnasium's Discrete over its logits)."""
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(obs_dim(self.actions),), dtype=np.float32)
        self.action_space = spaces.Discrete(self.actions.size)
        self._spaces: dict[str, KernelSpace] = {}
        self._evaluators: dict[str, CycleEvaluator] = {}
        self.kernel: str | None = None
        self.key: tuple[str, ...] = ()
        self.sequence: list[str] = []

    # -- shared with the batched trainer -------------------------------------------------------------------
    def space(self, kernel: str) -> KernelSpace:
        if kernel not in self._spaces:
            spec, root = self.kernels[kernel]
            self._spaces[kernel] = KernelSpace(root, self.config.ptxas_legality, self.actions, launch=spec)
        return self._spaces[kernel]

    def evaluator(self, kernel: str) -> CycleEvaluator:
        if kernel not in self._evaluators:
            spec, root = self.kernels[kernel]
            self._evaluators[kernel] = CycleEvaluator(spec, root, self.backend)
        return self._evaluators[kernel]

    def baseline(self, kernel: str) -> Outcome:
        base = self.evaluate(kernel, [()])[0]
        if not base.valid:
            raise TrainingError(f"{kernel}: the baseline itself is invalid ({base.reason}); it cannot be a "
                               "reference for rewards")
        return base

    def evaluate(self, kernel: str, keys: list[tuple[str, ...]]) -> list[Outcome]:
        """Outcomes of canonical sets, measured in one backend call (variants come from the cache)."""
        return self.evaluator(kernel).outcomes(keys, self.space(kernel).module)

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
        super().reset(seed=seed)  # seeds self.np_random
        kernel = (options or {}).get("kernel")
        if kernel is None:  # no kernel named: a uniformly random one
            kernel = self.names[int(self.np_random.integers(len(self.names)))]
        if kernel not in self.kernels:
            raise KeyError(f"unknown kernel {kernel!r}; this env has {len(self.names)}: "
                           f"{', '.join(self.names)}")
        self.kernel, self.key, self.sequence = kernel, (), []
        return self.space(kernel).obs(()).copy(), self._info()

    def action_masks(self) -> np.ndarray:
        """The 0/1 mask of the current state (for maskable-policy libraries)."""
        return self.space(self.kernel).mask(self.key).copy()

    def step(self, action: int):
        if self.kernel is None:
            raise RuntimeError("call reset() before step()")
        action, names = int(action), self.actions.names
        if not (0 <= action < len(names)) or self.action_masks()[action] < 0.5:
            name = names[action] if 0 <= action < len(names) else "?"
            raise ValueError(f"action {action} ({name}) is masked out after "
                             f"{self.sequence or '(nothing)'} on {self.kernel}")
        sp = self.space(self.kernel)
        terminated = action == STOP
        if not terminated:
            name = names[action]
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


def load_env_kernels(kernels_dir: Path) -> dict:
    """name -> (KernelSpec, root Module) for every spec in kernels_dir/specs.json."""
    specs_json = Path(kernels_dir) / "specs.json"
    return {s.kernel: (s, load_module(specs_json, s)) for s in load_specs(specs_json)}
