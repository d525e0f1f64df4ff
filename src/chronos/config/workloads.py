"""The real workloads Chronos captures, tunes and times end to end, in one list.

Read by the capture workflow (workflow/captured/Snakefile: its default targets), by scripts/workloads.py
(whose definitions must match it name for name and phase for phase), and by the config: the captured
families of `search.headroom`, `search.census`, `search.random_time` default to these, and a `captured/<w>`
family in params.yaml must name one of them. A workload you capture yourself (`chronos capture --out DIR --
CMD`) needs no entry: the registry is the project's own corpus, not a limit on what can be tuned.
"""

from __future__ import annotations

from dataclasses import dataclass

from chronos.errors import ConfigError


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    phases: tuple[str, ...]
    """What one step runs (scripts/workloads.py: each phase returns the tensors compared stock vs tuned)."""

    @property
    def family(self) -> str:
        """Its folder under data/kernels, where capture writes it."""
        return f"captured/{self.name}"


WORKLOADS: tuple[Workload, ...] = (
    Workload("llama", "Llama (transformers, hidden 4096, 2 layers, GQA 32/8) under torch.compile, seq 2048",
             ("train", "prefill", "decode")),
    Workload("gpt2", "GPT-2 (transformers, n_embd 1600, 2 layers) under torch.compile, 4 x 1024",
             ("train", "prefill", "decode")),
    Workload("bert", "BERT masked LM (transformers, hidden 1024, 2 layers) under torch.compile, 8 x 512",
             ("train", "inference")),
    Workload("flex", "FlexAttention forward + backward, causal and sliding-window masks (32 heads x 4096 x "
             "128), and its decode shape (8 query tokens against 8192)", ("train", "decode")),
)
NAMES: tuple[str, ...] = tuple(w.name for w in WORKLOADS)
FAMILIES: tuple[str, ...] = tuple(w.family for w in WORKLOADS)


def workload(name: str) -> Workload:
    for w in WORKLOADS:
        if w.name == name:
            return w
    raise ConfigError(f"unknown workload {name!r}; registered: {', '.join(NAMES)} (chronos.config.workloads)")


def check_families(families, key: str) -> None:
    """Every `captured/<w>` family names a registered workload (a typo would silently search nothing)."""
    for f in families:
        if f.startswith("captured/") and f not in FAMILIES:
            raise ConfigError(f"{key}: {f!r} is not a registered workload's family; registered: "
                              f"{', '.join(FAMILIES)} (chronos.config.workloads)")
