"""Rewrite a transformers wheel keeping only the model folders the workloads use, so that a device call
(64 MiB of working tree) can carry it: the whole 4.57 wheel is 12 MB, pruned to auto/llama/gpt2/bert 1.9 MB.

    python scripts/prune_wheel.py .whl_models/transformers-4.57.6-py3-none-any.whl --out /tmp/pruned

RECORD keeps only the files that stay (their hashes unchanged); everything outside `transformers/models/`
is kept. Checked (2026-12-05): LlamaForCausalLM, GPT2LMHeadModel and BertForMaskedLM build from the pruned
wheel, and the four workloads ran from it on the device.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

KEEP = ("auto", "llama", "gpt2", "bert")


def kept(name: str, keep: tuple[str, ...]) -> bool:
    parts = name.split("/")
    if parts[:2] != ["transformers", "models"] or len(parts) < 4:
        return True  # the package, its dist-info, and models/__init__.py
    return parts[2] in keep


def prune(wheel: Path, out: Path, keep: tuple[str, ...] = KEEP) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    dest = out / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if not kept(info.filename, keep):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(line for line in lines if kept(line.split(",", 1)[0], keep)).encode()
            dst.writestr(info, data)
    return dest


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheel", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--keep", nargs="+", default=list(KEEP), help="model folders to keep")
    args = p.parse_args()
    dest = prune(args.wheel, args.out, tuple(args.keep))
    print(f"{dest}: {dest.stat().st_size / 1e6:.1f} MB (from {args.wheel.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
