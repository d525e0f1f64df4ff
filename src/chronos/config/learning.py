"""How the policy learns and decides: the episode (`env:`), behaviour cloning (`bc:`), DA-GRPO (`grpo:`),
inference (`predict:`) and the leave-one-workload-out evaluation (`heldout:`)."""

from __future__ import annotations

from dataclasses import dataclass

from chronos.config.checks import check
from chronos.config.checks import check as _check


@dataclass(frozen=True)
class EnvConfig:
    """Episode and reward settings: the only owner of them (GRPO and predict take theirs from here)."""

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

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "env.max_steps", f"must be >= 1, got {self.max_steps}")


@dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning of the greedy demonstrations (the seed: 50 epochs)."""

    epochs: int = 50
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 1e-4
    seed: int = 0
    """Seeds the initial weights, the kernel split and the batch order."""
    hidden: int = 128
    """Hidden width of the policy MLP."""
    dropout: float = 0.1
    heldout_fraction: float = 0.25
    """Fraction of the demonstrations' kernels held out when no explicit held-out list is given."""

    def __post_init__(self) -> None:
        _check(self.epochs >= 1, "bc.epochs", f"must be >= 1, got {self.epochs}")
        _check(self.lr > 0, "bc.lr", f"must be > 0, got {self.lr}")
        _check(self.batch_size >= 1, "bc.batch_size", f"must be >= 1, got {self.batch_size}")
        _check(self.hidden >= 1, "bc.hidden", f"must be >= 1, got {self.hidden}")
        _check(0 <= self.dropout < 1, "bc.dropout", f"must be in [0, 1), got {self.dropout}")
        _check(0 <= self.heldout_fraction < 1, "bc.heldout_fraction", f"in [0, 1): {self.heldout_fraction}")


TEMPERATURE_SCHEDULES = ("linear", "cosine", "exponential", "constant")


@dataclass(frozen=True)
class GRPOConfig:
    """DA-GRPO (rewards from the measurement backend; on replay, the atlas)."""

    epochs: int = 450
    group_size: int = 8
    """1 anchor from the BC reference + (group_size - 1) rollouts with forced, distinct first actions."""
    clip_eps: float = 0.2
    beta: float = 0.01
    """KL penalty against the BC reference."""
    lr: float = 1e-3
    update_iters: int = 4
    max_grad_norm: float = 1.0
    temperature_start: float = 1.0
    temperature_end: float = 0.5
    temperature_schedule: str = "linear"
    anchor: str = "greedy"
    """greedy: the reference's greedy rollout is the anchor; sample: it is sampled."""
    forced_step_in_loss: bool = True
    off_policy_ratio: str = "current"
    """"Old" prob. of forced first steps and anchor steps: current (policy's) | behaviour (1 if fixed)."""
    max_steps: int = EnvConfig.max_steps
    step_cost: float = EnvConfig.step_cost
    invalid_penalty: float = EnvConfig.invalid_penalty
    seed: int = 0
    log_interval: int = 25
    """Log a progress line every this many epochs (0: none); the best checkpoint's pick runs every epoch."""

    def __post_init__(self) -> None:
        _check(self.epochs >= 1, "grpo.epochs", f"must be >= 1, got {self.epochs}")
        _check(self.group_size >= 2, "grpo.group_size", f"must be >= 2, got {self.group_size}")
        _check(self.lr > 0, "grpo.lr", f"must be > 0, got {self.lr}")
        _check(self.update_iters >= 1, "grpo.update_iters", f"must be >= 1, got {self.update_iters}")
        choices = {"temperature_schedule": TEMPERATURE_SCHEDULES, "anchor": ("greedy", "sample"),
                   "off_policy_ratio": ("current", "behaviour")}
        for key, allowed in choices.items():
            value = getattr(self, key)
            _check(value in allowed, f"grpo.{key}", f"must be one of {allowed}, got {value!r}")
        _check(self.max_steps >= 1, "grpo.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(self.log_interval >= 0, "grpo.log_interval", f"must be >= 0, got {self.log_interval}")

    @property
    def env(self) -> EnvConfig:
        return EnvConfig(max_steps=self.max_steps, step_cost=self.step_cost,
                         invalid_penalty=self.invalid_penalty)


@dataclass(frozen=True)
class PredictConfig:
    max_steps: int = EnvConfig.max_steps
    """Greedy steps per kernel, as the seed's inference."""
    beam: int = 8
    """The optimize path also measures the policy's `beam` most probable sets (1: greedy only)."""

    def __post_init__(self) -> None:
        _check(self.max_steps >= 1, "predict.max_steps", f"must be >= 1, got {self.max_steps}")
        _check(self.beam >= 1, "predict.beam", f"must be >= 1, got {self.beam}")




@dataclass(frozen=True)
class HeldoutConfig:
    """Stage heldout (#14): leave-one-workload-out over the census's families. Per fold a v2 policy learns
    the one-step decision (which single action, or stop) from the other families' census: behaviour cloning
    of the measured best, then group-relative policy optimisation with the measured log(time ratio) as
    reward (replayed, nothing is estimated), and is scored on the held-out family beside the best fixed
    action and the oracle."""

    hidden: int = 64
    bc_epochs: int = 200
    bc_lr: float = 1e-3
    epochs: int = 1500
    """GRPO epochs (each: every training kernel, `group` sampled actions, one update)."""
    lr: float = 3e-4
    group: int = 8
    beta: float = 0.05
    """Weight of the KL term towards the BC policy (the reference)."""
    clip_eps: float = 0.2
    temperature: float = 1.0
    beam: int = 3
    """The optimize path's beam: the policy's k most likely actions, the best measured one kept."""
    fixed_beam: int = 3
    """0 (off) or k: also score `fixed_beam`, the k best legal actions of the training families' ranking,
    the best measured one kept: what a beam buys without learning. On, its picks join each kernel's
    side-by-side comparison, whose key then changes: a GPU run must time them before replay can."""
    seed: int = 0
    space: str = "v2"
    """The action space the fold's policy, fixed ranking and oracle choose from, with its observation: v2,
    or the seed's 20 actions (all measured in the v2 census) read through the seed's 25 features: the seed
    configuration on the same kernels (`dvc exp run -S heldout.space=seed`)."""

    select_bc_epochs: tuple[int, ...] = (50, 200)
    select_stops: tuple[int, ...] = (0, 150, 500, 1500)
    """Both non-empty: the policy is early-stopped, its BC epochs and GRPO stop epoch (0: BC alone; beyond
    `epochs`: the last) chosen from these by leave-one-family-out inside the training families
    (chronos.rl.onestep.select_by_inner_folds); GRPO still runs all `epochs` for the curves. Either empty:
    bc_epochs and epochs, as before."""

    def __post_init__(self) -> None:
        check(self.space in ("seed", "v2"), "heldout.space", f"must be seed or v2, got {self.space!r}")
        check(all(b >= 1 for b in self.select_bc_epochs), "heldout.select_bc_epochs", "each must be >= 1")
        check(all(s >= 0 for s in self.select_stops), "heldout.select_stops", "each must be >= 0")
        for k in ("hidden", "bc_epochs", "epochs", "group", "beam"):
            check(getattr(self, k) >= 1, f"heldout.{k}", f"must be >= 1, got {getattr(self, k)}")
        for k in ("bc_lr", "lr", "temperature"):
            check(getattr(self, k) > 0, f"heldout.{k}", f"must be > 0, got {getattr(self, k)}")
        check(self.beta >= 0, "heldout.beta", f"must be >= 0, got {self.beta}")
        check(self.fixed_beam >= 0, "heldout.fixed_beam", f"must be >= 0, got {self.fixed_beam}")
        check(0 < self.clip_eps < 1, "heldout.clip_eps", f"must be in (0, 1), got {self.clip_eps}")
