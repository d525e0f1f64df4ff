#!/usr/bin/env bash
# Build the nvcc part of the PTX test corpus: tests/corpus/cuda/*.cu -> tests/corpus/nvcc/<name>.<arch>.ptx
# Made with: nvcc 13.0 (Cuda compilation tools, release 13.0, V13.0.88), 2026-11-30.
# sm_90 output carries -lineinfo so the corpus has .file/.loc directives; sm_89 has none.
# Usage: scripts/make_nvcc_corpus.sh   (NVCC=/path/to/nvcc to pick another compiler)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-nvcc}"
out="$root/tests/corpus/nvcc"
mkdir -p "$out"
"$nvcc" --version | tail -2
cd "$root/tests/corpus/cuda"
for src in *.cu; do
    name="${src%.cu}"
    "$nvcc" -ptx -O3 -arch=sm_89 "$src" -o "$out/$name.sm_89.ptx"
    "$nvcc" -ptx -O3 -lineinfo -arch=sm_90 "$src" -o "$out/$name.sm_90.ptx"
done
# nvcc writes absolute paths into .file; make the repo's own ones relative so output is machine-independent.
sed -i "s#\"$root/#\"#" "$out"/*.sm_90.ptx
ls -l "$out"
