"""The real workloads Chronos captures, tunes and times end to end, in one list.

Read by the capture workflow (workflow/captured/Snakefile: its default targets), by scripts/workloads.py
(whose definitions must match it name for name and phase for phase), and by the config: the captured
families of `search.headroom`, `search.census`, `search.random_time` default to these, and a `captured/<w>`
family in params.yaml must name one of them (search.knob_census may also name a PENDING one: captured, not
yet searched by every stage). A workload you capture yourself (`chronos capture --out DIR --
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

PENDING: tuple[Workload, ...] = (
    Workload("flex_decode_long", "FlexAttention decode against long KV caches: one token, 32 query heads "
             "over 8 KV heads, d 128, batch 1, 2, 4 and 8, context 32768, whole cache and a 4096 window",
             ("decode",)),
    Workload("attorch_lm", "A Llama-like decoder of attorch's hand-written Triton kernels (norms, "
             "projections, SwiGLU, loss; hidden 2048, 2 layers, 2 x 2048 tokens, fp16 autocast)",
             ("train", "inference")),
)
"""Captured (#28 item 7) but not registered: the compile-knob stages may name them (search.knob_census), the
searches every registered workload gets (headroom, census, random_time) may not, until they are measured."""
PENDING_FAMILIES: tuple[str, ...] = tuple(w.family for w in PENDING)


def workload(name: str) -> Workload:
    """A registered or pending workload by name."""
    for w in (*WORKLOADS, *PENDING):
        if w.name == name:
            return w
    raise ConfigError(f"unknown workload {name!r}; registered: {', '.join(NAMES)}; pending: "
                      f"{', '.join(w.name for w in PENDING)} (chronos.config.workloads)")


def check_families(families, key: str, pending: bool = False) -> None:
    """Every `captured/<w>` family names a registered workload, or with `pending` a pending one too (a typo
    would silently search nothing)."""
    allowed = (*FAMILIES, *PENDING_FAMILIES) if pending else FAMILIES
    for f in families:
        if f.startswith("captured/") and f not in allowed:
            what = "registered or pending" if pending else "registered"
            raise ConfigError(f"{key}: {f!r} is not a {what} workload's family; registered: "
                              f"{', '.join(FAMILIES)}" + (f"; pending: {', '.join(PENDING_FAMILIES)}"
                                                          if pending else "") + " (chronos.config.workloads)")
