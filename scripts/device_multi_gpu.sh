#!/usr/bin/env bash
# One call on a two-GPU host (issue 7), each step's output packed as it lands: the shipped kernel
# benched on GPU 0 alone (filling Triton's cache), on GPU 1 alone (per-GPU agreement), on both
# at once (throughput ratio), then a headless two-agent loop on --gpus 0,1 while a sampler records
# which agents' processes use each GPU and which agents lease it.
# Usage: device_multi_gpu.sh OUT [MINUTES]; the loop's wheels travel in .whl.
set -uo pipefail
out=${1:?output directory}
minutes=${2:-1}
source "$(dirname "$0")/device_common.sh"
install_wheels
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; } > "$out/env.txt" 2>&1
bench=("${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --rule quick)

pair() {  # pair NAME: the same bench on GPU 0 and GPU 1 at once
  local start; start=$(date +%s)
  "${bench[@]}" --device cuda:0 --json "$out/$1_gpu0.json" > "$out/$1_gpu0.txt" 2>&1 &
  "${bench[@]}" --device cuda:1 --json "$out/$1_gpu1.json" > "$out/$1_gpu1.txt" 2>&1 &
  wait
  echo "$1 wall_s=$(( $(date +%s) - start ))" | tee -a "$out/steps.txt"
  pack
}

step alone_gpu0 120 "${bench[@]}" --device cuda:0 --json "$out/alone_gpu0.json"
step alone_gpu1 120 "${bench[@]}" --device cuda:1 --json "$out/alone_gpu1.json"
pair pair
workspace=/tmp/qrsup-multi-ws
mkdir -p "$workspace/runs/default"
python scripts/sample_gpu_holders.py "$workspace/runs/default" "$out/holders.jsonl" &
sampler=$!
step loop $(( minutes * 60 + 150 )) "${qrsup[@]}" run --headless --agents 2 --gpus 0,1 \
  --budget "${minutes}m" --workspace "$workspace" --init
kill "$sampler"
cp "$workspace/log.md" "$out/loop_log.md" 2>/dev/null
cp "$workspace"/runs/default/store.sqlite* "$out/" 2>/dev/null
pack
cat "$out/steps.txt"
