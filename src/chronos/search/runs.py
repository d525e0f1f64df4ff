"""Searching many kernels: which kernels, one strategy run per kernel, failures recorded, one summary.

    for run in search_kernels({"random": cfg}, Path("data/kernels"), ["gemm_tile"], backend):
        ...  # run.result (a SearchResult) or run.error; one kernel's failure never stops the others
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import KernelSpec, load_module, load_specs
from chronos.progress import progress
from chronos.search import run as run_search
from chronos.search.base import SearchResult


def kernels_of(kernels: Path, families: list[str] | tuple[str, ...], only: str | None = None,
               by_entry: bool = False) -> Iterator[tuple[str, Path, KernelSpec]]:
    """(family, specs.json, spec) for every kernel of the families, optionally filtered by a regex on the
    kernel name (or, with by_entry, on the entry name)."""
    for family in families:
        specs_json = Path(kernels) / family / "specs.json"
        for spec in load_specs(specs_json):
            if not only or re.search(only, spec.entry if by_entry else spec.kernel):
                yield family, specs_json, spec


@dataclass
class KernelRun:
    """One strategy on one kernel: its result, or the error that stopped it."""

    strategy: str
    family: str
    spec: KernelSpec
    result: SearchResult | None
    error: str | None
    seconds: float

    def line(self, extra: str = "") -> str:
        """One log line (kernel, cycles before → after, the chosen set)."""
        strategy = self.strategy
        if self.result is None:
            return f"{strategy}: {self.spec.kernel}: FAILED: {one_line(self.error, 300)}"
        r = self.result
        return (f"{strategy}: {self.spec.kernel:44s} {r.baseline.cycles:>9.0f} -> {r.best.cycles:>9.0f} "
                f"({100 * r.change:+.1f}%) {'+'.join(r.best.actions) or '-'} [{r.evaluated} sets{extra}, "
                f"{self.seconds:.1f} s]")


def search_kernels(strategies: Mapping[str, object], kernels: Path, families, backend,
                   only: str | None = None,
                   by_entry: bool = False) -> Iterator[KernelRun]:
    """Kernel by kernel, each strategy in turn (so a cut-off run has every answer for the kernels it reached).
    `strategies` maps a strategy name to its config, or to a function of the spec that returns it."""
    selected = list(kernels_of(kernels, families, only, by_entry=by_entry))
    for family, specs_json, spec in progress(selected, desc="+".join(strategies), unit="kernel"):
        root = load_module(specs_json, spec)
        for strategy, config in strategies.items():
            cfg = config(spec) if callable(config) else config
            t0 = time.perf_counter()
            try:
                res, error = run_search(strategy, spec, root, backend, cfg), None
            except ChronosError as e:  # recorded; the run goes on
                res, error = None, str(e)
            yield KernelRun(strategy, family, spec, res, error, time.perf_counter() - t0)


def run_greedy(kernels: Path, cfg, backend, only: str | None = None, log=print,
               by_entry: bool = False) -> tuple[list[dict], list[dict]]:
    """Greedy (the seed's teacher) on every kernel of `cfg.families`: (per-kernel results, demonstrations).
    Results carry an "entry" key when by_entry is set."""
    results, demos = [], []
    for run in search_kernels({"greedy": cfg}, kernels, cfg.families, backend, only, by_entry):
        tag = {"entry": run.spec.entry} if by_entry else {}
        if run.result is None:
            log(run.line())
            results.append({"kernel": run.spec.kernel, "family": run.family, "error": run.error, **tag})
            continue
        res = run.result
        entry = res.to_json()
        entry.update(family=run.family, sequence=list(res.best.actions), final=res.best.to_json(), **tag)
        results.append(entry)
        demos.extend(res.demos)
        log(run.line(f", {res.unique_cubins} cubins"))
    return results, demos


def search_summary(results: list[dict]) -> dict:
    """Counts and the mean relative cycle change over the kernels that did not fail."""
    ok = [r for r in results if "error" not in r]
    return {"kernels": len(results), "failed": len(results) - len(ok),
            "mean_change": sum(r["change"] for r in ok) / len(ok) if ok else None,
            "measured_sets": sum(r["evaluated"] for r in ok)}
