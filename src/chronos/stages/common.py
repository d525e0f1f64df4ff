"""What the search stages share: which kernels to visit, and the summary they write."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from chronos.kernels.spec import KernelSpec, load_specs


def kernels_of(kernels: Path, families: list[str], only: str | None = None,
               by_entry: bool = False) -> Iterator[tuple[str, Path, KernelSpec]]:
    """(family, specs.json, spec) for every kernel of the families, optionally filtered by a regex on the
    kernel name (or, with by_entry, on the entry name)."""
    for family in families:
        specs_json = Path(kernels) / family / "specs.json"
        for spec in load_specs(specs_json):
            if not only or re.search(only, spec.entry if by_entry else spec.kernel):
                yield family, specs_json, spec


def search_provenance(backend_provenance: dict, results: list[dict], argv: list[str] | None, stage: str) -> dict:
    """GPU/driver/ptxas of the records, when they were measured (first/last), the backend and the command."""
    import shlex
    import sys

    firsts = [r["measured"]["first"] for r in results if r.get("measured", {}).get("first")]
    lasts = [r["measured"]["last"] for r in results if r.get("measured", {}).get("last")]
    cmd = shlex.join(["python", "-m", f"chronos.stages.{stage}", *(argv if argv is not None else sys.argv[1:])])
    return {**backend_provenance, "date": max(lasts) if lasts else None,
            "measured": {"first": min(firsts), "last": max(lasts)} if firsts else None, "command": cmd}


def search_summary(results: list[dict]) -> dict:
    """Counts and the mean relative cycle change over the kernels that did not fail."""
    ok = [r for r in results if "error" not in r]
    return {"kernels": len(results), "failed": len(results) - len(ok),
            "mean_change": sum(r["change"] for r in ok) / len(ok) if ok else None,
            "measured_sets": sum(r["evaluated"] for r in ok)}
