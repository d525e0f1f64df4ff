"""Rewrite the code dependencies of every stage in dvc.yaml and the Snakemake rules from what the stage
really imports (tests/stages/test_stage_code_deps.py checks the same closure): a subpackage by its folder,
a stage module or a top-level module by its file. Data dependencies are kept as they are.

    python scripts/sync_stage_deps.py      # from the repository root; then review `git diff`
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.stages.test_stage_code_deps import closure


def code_deps(stage_module: str) -> list[str]:
    out = set()
    for f in closure(stage_module):
        parts = f.split("/")  # src/chronos/<pkg>/... or src/chronos/<module>.py
        out.add(f if len(parts) == 3 or parts[2] == "stages" else "/".join(parts[:3]))
    return sorted(out)


def sync_dvc(text: str) -> tuple[str, dict[str, list[str]]]:
    deps_of = {}

    def fix(m: re.Match) -> str:
        name, body = m.group(1), m.group(0)
        module = re.search(r"python -m (chronos\.stages\.\w+)", body).group(1)
        deps_of[name] = code_deps(module)
        lines = body.split("\n")
        start = lines.index("    deps:") + 1
        end = start
        while end < len(lines) and lines[end].startswith("      - "):
            end += 1
        data = [ln for ln in lines[start:end] if not ln.startswith("      - src/")]
        items = sorted(data + [f"      - {d}" for d in deps_of[name]], key=lambda ln: ln.split("- ", 1)[1])
        return "\n".join(lines[:start] + items + lines[end:])

    return re.sub(r"(?m)^  (\w+):\n(?:    .*\n|      .*\n|\n(?=    ))*", fix, text), deps_of


def sync_smk(text: str, deps_of: dict[str, list[str]]) -> str:
    def fix(m: re.Match) -> str:
        name, block = m.group(1), m.group(2)
        if name not in deps_of:
            return m.group(0)
        lines = block.split("\n")
        code = [ln for ln in lines if '"src/' in ln]
        if not code:
            return m.group(0)
        wrap = "ancient(" in code[0]
        new = [f'        ancient("{d}"),' if wrap else f'        "{d}",' for d in deps_of[name]]
        at = lines.index(code[0])  # the code inputs stand together, sorted: replaced where they stood
        rest = [ln for ln in lines if '"src/' not in ln]
        return f"rule {name}:\n    input:\n" + "\n".join(rest[:at] + new + rest[at:])

    return re.sub(r"(?m)^rule (\w+):\n    input:\n((?:        .*\n)+)", fix, text)


def main() -> int:
    dvc = ROOT / "dvc.yaml"
    text, deps_of = sync_dvc(dvc.read_text())
    dvc.write_text(text)
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        smk.write_text(sync_smk(smk.read_text(), deps_of))
    print(f"sync_stage_deps: code deps of {len(deps_of)} stages written to dvc.yaml and workflow/rules/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
