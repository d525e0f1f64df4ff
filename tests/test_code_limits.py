"""Limits the code keeps (as tinygrad enforces its line counts): small modules, short functions."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "chronos"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules():
    return sorted(SRC.rglob("*.py"))


def test_modules_stay_small():
    sizes = {str(f.relative_to(SRC)): len(f.read_text().splitlines()) for f in _modules()}
    big = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them): {big}"


def test_functions_stay_short():
    long = {}
    for f in _modules():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{f.relative_to(SRC)}:{node.lineno} {node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the chronos modules it imports, at module level or inside a function (where lint-imports'
    layers see a package as one layer, a loop between two of its modules can hide)."""
    names = {_module_name(f): f for f in _modules()}

    def resolve(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in names}
    for mod, path in names.items():
        for node in ast.walk(ast.parse(path.read_text())):
            found = []
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if isinstance(node, ast.ImportFrom) and node.level == 0 and module.startswith("chronos"):
                found = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names if a.name.startswith("chronos")]
            for target in filter(None, map(resolve, found)):
                if target != mod and not mod.startswith(target + "."):  # a package's own __init__
                    graph[mod].add(target)
    return graph


def test_no_import_loops_anywhere():
    graph = import_graph()
    loops = []
    for start in graph:  # a path from a module's import back to itself
        seen, stack = set(), [(start, (start,))]
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    loops.append(" -> ".join((*path, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*path, nxt)))
    assert not loops, f"import loops (move what both need below both): {sorted(set(loops))[:5]}"


def test_stages_are_shells_that_import_no_other_stage():
    """A stage (a module of chronos.stages with a __main__) imports the library and the stages' shared shell
    helpers, never another stage; benchmarks and experiments import the library, never a stage."""
    stages = {_module_name(f) for f in (SRC / "stages").glob("*.py") if "__main__" in f.read_text()}
    graph = import_graph()
    crossing = {s: sorted(graph[s] & stages) for s in stages if graph[s] & stages}
    assert not crossing, f"stages importing stages (move what they share into the library): {crossing}"
    root = SRC.parents[1]
    users = [*root.glob("benchmarks/*.py"), *root.glob("experiments/**/*.py")]
    bad = [str(p.relative_to(root)) for p in users if "from chronos.stages" in p.read_text()
           or "import chronos.stages" in p.read_text()]
    assert not bad, f"benchmarks/experiments importing a stage: {bad}"


def test_every_module_has_a_home():
    """The package root keeps the few modules everything shares (the CLI dispatcher, errors, files, progress,
    the toolchain, the action space, the GPU's limits); the rest lives in a subpackage that says what it is.
    A new top-level module needs a reason that this list's owner accepts."""
    top = sorted(p.stem for p in SRC.glob("*.py") if p.stem != "__init__")
    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())
    assert top == ["actions", "cli", "errors", "files", "gpu", "progress", "sass", "toolchain"], top
    assert len(top) < len(packages), (top, packages)


def test_commands_are_shells_only_the_cli_imports():
    """chronos.commands holds the argparse shells; the library and the stages call the library beneath
    them (chronos.tuning, chronos.optimize, chronos.triton), never a command."""
    graph = import_graph()
    users = {m for m, targets in graph.items() for t in targets
             if t.startswith("chronos.commands") and not m.startswith("chronos.commands")}
    assert users == {"chronos.cli"}, users


def test_scripts_import_no_stage():
    """Device checks and corpus scripts call the library (an A/A comparison is chronos.measure.aa), never a
    stage's module."""
    root = SRC.parents[1]
    bad = [str(p.relative_to(root)) for p in root.glob("scripts/*.py") if "chronos.stages" in p.read_text()]
    assert not bad, f"scripts importing a stage: {bad}"
