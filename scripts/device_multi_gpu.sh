#!/usr/bin/env bash
# One call on a two-GPU host (issue 7), each step's output packed as it lands: the shipped kernel
# benched on GPU 0 alone (filling Triton's cache), on GPU 1 alone (per-GPU agreement), on both
# at once (throughput ratio), then headless tuner loops of MINUTES each, one agent on GPU 0 and two
# agents on --gpus 0,1 (loop-level scaling), while a sampler records which agents' processes use
# each GPU and which agents lease it. About 6 + 2 x MINUTES minutes of device time.
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
loop() {  # loop NAME AGENTS GPUS: a headless tuner session, its GPU holders sampled meanwhile
  local workspace=/tmp/qrsup-$1 runs
  runs=$workspace/runs/default
  mkdir -p "$runs"
  python scripts/sample_gpu_holders.py "$runs" "$out/$1_holders.jsonl" &
  local sampler=$!
  step "$1" $(( minutes * 60 + 150 )) "${qrsup[@]}" run --headless --agents "$2" --gpus "$3" \
    --budget "${minutes}m" --workspace "$workspace" --init
  kill "$sampler"
  python - "$runs/store.sqlite" > "$out/$1_summary.json" <<'PY'
import json, sys
from collections import Counter
from pathlib import Path
from agents.store import Store
store = Store(Path(sys.argv[1]))
rows = store.evaluations()
print(json.dumps({
    "evaluations": len(rows),
    "by_agent": Counter(r["agent"] for r in rows),
    "first_s": min(r["created_at"] for r in rows),
    "last_s": max(r["created_at"] for r in rows),
}))
PY
  cp "$workspace/log.md" "$out/$1_log.md" 2>/dev/null
  pack
}

loop loop_one 1 0
loop loop_two 2 0,1
cat "$out/steps.txt" "$out"/loop_*_summary.json
