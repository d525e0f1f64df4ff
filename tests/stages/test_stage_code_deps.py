"""Every pipeline stage lists, as dvc.yaml deps, the code it really imports (transitively, function-level
imports included), so editing any of it reruns the stage. tests/test_pipeline_agreement.py keeps the
Snakefile's inputs equal to dvc.yaml's deps, so this covers both."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
# Only `__version__` and a docstring: a version bump must not rerun the whole pipeline.
IGNORED = {"src/chronos/__init__.py"}


def module_file(name: str) -> Path | None:
    """src/ file of a chronos module or package, or None (a class, a function)."""
    base = SRC / Path(*name.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def imported_modules(path: Path) -> set[str]:
    """chronos modules a file imports anywhere (module level or inside functions)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("chronos")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chronos"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names if module_file(f"{node.module}.{a.name}")}
    return out


def closure(module: str) -> set[str]:
    """Repo-relative files executed by importing `module` (its parents' __init__ files included)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__, then c
            f = module_file(".".join(parts[:i]))
            if f is None:
                continue
            rel = f.relative_to(ROOT).as_posix()
            if rel not in seen:
                seen.add(rel)
                todo += sorted(imported_modules(f))
    return seen - IGNORED


def covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


def test_every_stage_lists_the_code_it_imports():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    missing = {}
    for name, stage in stages.items():
        m = re.search(r"python -m (chronos\.stages\.\w+)", " ".join(str(stage["cmd"]).split()))
        assert m, f"stage {name}: its command does not run a chronos stage module"
        deps = [d if isinstance(d, str) else next(iter(d)) for d in stage.get("deps", [])]
        lacking = sorted(f for f in closure(m.group(1)) if not covered(f, deps))
        if lacking:
            missing[name] = lacking
    assert not missing, f"stages whose dvc.yaml deps (and Snakefile inputs) omit imported code: {missing}"


def test_closure_follows_function_level_imports(tmp_path):
    # the stage grpo imports chronos.measure only inside a function; the closure must still see it
    assert any(f.startswith("src/chronos/measure/") for f in closure("chronos.stages.grpo"))
