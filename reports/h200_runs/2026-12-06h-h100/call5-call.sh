#!/usr/bin/env bash
# device-tmp only: bert's walk, then gpt2/llama's knob stages and walk, within one call; kept in .device/keep
T0=$SECONDS; O=$OUT; mkdir -p data/store
left() { echo $((570 - (SECONDS - T0))); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $GPU"
if [[ $GPU == *H200* ]]; then rm -f data/knob_walk/captured/bert/*.json; B=300; else B=150; fi
OUT=$O/a KNOB_BUDGET_knob_walk=$B LIMIT=$((B + 40)) bash scripts/device.sh knob_walk
sed -i 's#families: \[captured/bert\]#families: [captured/gpt2, captured/llama]#' params.yaml
grep -n "families: \[captured/gpt2" params.yaml
L=$(left); echo "left $L s"
if [[ $L -gt 200 ]]; then
  OUT=$O/b KNOB_BUDGET_knob_census=25 KNOB_BUDGET_knob_ptx=$(( (L - 150) / 2 )) KNOB_BUDGET_knob_blocks=30 \
    LIMIT=$(( L / 2 )) WORKLOADS="gpt2 llama" bash scripts/device.sh knob_census knob_ptx knob_blocks walk_roots
fi
L=$(left); echo "left $L s"
if [[ $L -gt 60 ]]; then OUT=$O/c KNOB_BUDGET_knob_walk=$((L - 40)) LIMIT=$((L - 5)) bash scripts/device.sh knob_walk; fi
rm -rf .device/keep && mkdir -p .device/keep && cp -r --parents data/knob_census data/knob_ptx data/knob_blocks \
  data/knob_walk data/kernels/captured/*/walk.json data/kernels/captured/*/walk .device/keep/
cat $O/*/logs/summary.txt; rm -rf $O/*/logs; ls -la $O/*
