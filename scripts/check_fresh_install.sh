#!/usr/bin/env bash
# chronos as a stranger gets it: a brand-new virtualenv, torch first (the CPU build: an unpinned resolve pulls
# the multi-GB CUDA one), then this repository installed NOT editable (a wheel: only what the package ships,
# so the default policy and params.yaml must come from its package data), and the installed `chronos tune`
# run from an empty directory on two kernels of the committed flex corpus, replayed from the store.
#
#   bash scripts/check_fresh_install.sh        # a few minutes; KEEP=1 keeps the temporary folder
#
# The sources are built from a copy of the checkout's pyproject.toml, README.md and src/ (tracked and new
# files, not ignored ones), so the build writes no build/ or egg-info into the working tree. Exit 0 when the
# tune succeeded and wrote its parts and summary, nothing landed in the directory it ran in, and the package
# imported is the installed one.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
TMP=$(mktemp -d -t chronos-fresh.XXXXXX)
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$TMP"' EXIT; else echo "keeping $TMP"; fi
unset PYTHONPATH
step() { echo "== $*"; }

step "copy of the sources ($REPO -> $TMP/src)"
mkdir "$TMP/src"
git -C "$REPO" ls-files -co --exclude-standard -- pyproject.toml README.md src \
  | tar -C "$REPO" -cf - -T - | tar -C "$TMP/src" -xf -

step "new venv; pip install torch==2.13.0"
"$PY" -m venv "$TMP/venv"
VPY="$TMP/venv/bin/python"
"$VPY" -m pip install -q torch==2.13.0
step "pip install (not editable) the repository"
"$VPY" -m pip install -q "$TMP/src"

mkdir "$TMP/empty"
cd "$TMP/empty"
step "the installed package"
"$VPY" - "$TMP/venv" "$REPO" <<'EOF'
import filecmp, sys
from pathlib import Path
import chronos
from chronos.defaults import params_path, policy_path
venv, repo = Path(sys.argv[1]), Path(sys.argv[2])
print(f"chronos {chronos.__version__} at {chronos.__file__}")
print(f"default policy {policy_path()}\ndefault params {params_path()}")
assert Path(chronos.__file__).is_relative_to(venv), "chronos imported from outside the new venv"
for shipped, mine in ((policy_path(), "models/checkpoint_best.pt"), (params_path(), "params.yaml")):
    assert shipped.is_relative_to(venv) and filecmp.cmp(shipped, repo / mine, shallow=False), (shipped, mine)
EOF

CORPUS="$REPO/data/kernels/captured/flex"
cmd=("$TMP/venv/bin/chronos" tune "$CORPUS" --backend replay --store "$REPO/data/store/measurements.sqlite"
     --parts "$TMP/out/parts" --only 'zeros_1|ones_0')
step "in an empty directory ($PWD): ${cmd[*]}"
set +e
"${cmd[@]}"
rc=$?
set -e
echo "exit status $rc"
step "results"
ls "$TMP/out/parts"
cat "$TMP/out/tune-summary.json"
leftover=$(ls -A "$TMP/empty")
[ "$rc" -eq 0 ] || { echo "FAIL: chronos tune exited $rc"; exit 1; }
[ "$(ls "$TMP/out/parts"/*.json | wc -l)" -eq 2 ] || { echo "FAIL: not two part files"; exit 1; }
[ -z "$leftover" ] || { echo "FAIL: files written where it ran: $leftover"; exit 1; }
echo "OK: a fresh non-editable install tunes from an empty directory"
