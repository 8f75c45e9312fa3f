#!/usr/bin/env bash
# Device calls for issue 7, each step's output packed as it lands. Steps:
#   alone_gpu0, alone_gpu1  the shipped kernel benched alone on one GPU (the first fills Triton's cache)
#   again_gpu0              the same bench on GPU 0 again: the run-to-run noise of one GPU
#   pair                    the bench on GPUs 0 and 1 at once: the judge's throughput ratio
#   loop_one                a headless tuner loop of MINUTES, one agent on GPU 0
#   loop_two                two agents on --gpus 0,1: loop-level scaling, no GPU shared
#   loop_shared             two agents on GPU 0 with --agents-per-gpu 2: sharing when asked
#   loop_ray                two agents on --gpus 0,1 with --executor ray (a local Ray instance;
#                           Ray installed beforehand by scripts/device_ray.sh)
# A sampler records, during each loop, which agents' processes use each GPU and which lease it.
# Usage: device_multi_gpu.sh OUT MINUTES [STEP...]; with no STEP, the plan for the GPUs visible.
# A call runs at most 10 minutes: a loop step takes about MINUTES + 1.5 minutes, a bench 0.5-1.
# The loop's wheels travel in .whl.
set -uo pipefail
out=${1:?output directory}
minutes=${2:?minutes per loop}
shift 2
source "$(dirname "$0")/device_common.sh"
start_call
bench=("${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --rule quick)

alone() {  # alone NAME GPU
  step "$1" 150 "${bench[@]}" --device "cuda:$2" --json "$out/$1.json"
}

pair() {  # the same bench on GPU 0 and GPU 1 at once
  local start; start=$(date +%s)
  "${bench[@]}" --device cuda:0 --json "$out/pair_gpu0.json" > "$out/pair_gpu0.txt" 2>&1 &
  "${bench[@]}" --device cuda:1 --json "$out/pair_gpu1.json" > "$out/pair_gpu1.txt" 2>&1 &
  wait
  echo "pair wall_s=$(( $(date +%s) - start ))" | tee -a "$out/steps.txt"
  pack
}

loop() {  # loop NAME AGENTS GPUS [RUN OPTION...]: a headless tuner session, its GPU holders sampled
  local name=$1 agents=$2 gpus=$3 workspace=/tmp/qrsup-$1 runs
  shift 3
  runs=$workspace/runs/default
  mkdir -p "$runs"
  python scripts/sample_gpu_holders.py "$runs" "$out/${name}_holders.jsonl" &
  local sampler=$!
  sleep 3
  kill -0 "$sampler" 2>/dev/null || echo "$name: the holder sampler died, see the call's output" | tee -a "$out/steps.txt"
  step "$name" $(( minutes * 60 + 150 )) "${qrsup[@]}" run --headless --agents "$agents" --gpus "$gpus" \
    --budget "${minutes}m" --workspace "$workspace" --init "$@"
  kill "$sampler"
  python scripts/loop_summary.py --workspace "$workspace" > "$out/${name}_summary.json" 2>&1
  cp "$runs/store.sqlite" "$out/${name}_store.sqlite" 2>/dev/null  # every report, for the details
  cp "$workspace/log.md" "$out/${name}_log.md" 2>/dev/null
  pack
}

run_step() {
  case $1 in
    alone_gpu0) alone alone_gpu0 0 ;;
    alone_gpu1) alone alone_gpu1 1 ;;
    again_gpu0) alone again_gpu0 0 ;;
    pair) pair ;;
    loop_one) loop loop_one 1 0 ;;
    loop_two) loop loop_two 2 0,1 ;;
    loop_shared) loop loop_shared 2 0 --agents-per-gpu 2 ;;
    loop_ray) loop loop_ray 2 0,1 --executor ray ;;
    *) echo "unknown step: $1" >&2; exit 2 ;;
  esac
}

if [ $# -eq 0 ]; then
  if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    set -- alone_gpu0 alone_gpu1 pair loop_one loop_two
  else
    set -- alone_gpu0 again_gpu0 loop_one loop_shared
  fi
fi
for name in "$@"; do run_step "$name"; done
cat "$out/steps.txt"
