#!/usr/bin/env bash
# One device call: the GPU-marked tests, a profile of the shipped kernel (with Nsight Compute),
# and a bounded headless tuner run on qr_v2 starting from the shipped kernel, summarised by
# scripts/loop_summary.py (throughput, where the judge's time went, the best-so-far curve).
# Usage: device_loop.sh OUT [MINUTES]. The device has no network: the wheels the loop needs
# beyond the device's image (gitpython, openai and their dependencies) travel in .whl.
set -uo pipefail
out=${1:?output directory}
minutes=${2:-5}
source "$(dirname "$0")/device_common.sh"
start_call
[ -z "${ONLY_LOOP:-}" ] && step gpu_tests 160 python -m pytest -q -m gpu tests/test_fast_geqrf.py tests/test_profile.py \
  tests/test_warm_referees.py tests/test_judge_cheaters.py
[ -z "${ONLY_LOOP:-}" ] && step profile 90 "${qrsup[@]}" profile kernels/candidates/fast_geqrf.py --suite qr_v2 --spec 3 \
  --ncu --json "$out/profile_fast_spec3.json"
workspace=/tmp/qrsup-gpu-ws
step loop $(( minutes * 60 + 120 )) "${qrsup[@]}" run --headless --agents 1 --budget "${minutes}m" \
  --workspace "$workspace" --init
python scripts/loop_summary.py --workspace "$workspace" > "$out/loop_summary.json" 2>&1
# The store comes back whole: the curve is drawn here (`scripts/plot_progress.py`), no plotting
# library travels to the device.
cp "$workspace/runs/default/store.sqlite" "$out/store.sqlite" 2>/dev/null
cp "$workspace/log.md" "$out/loop_log.md" 2>/dev/null
cp "$workspace/runs/default/agents/a1/agent.log" "$out/loop_agent.log" 2>/dev/null
cat "$out/steps.txt" "$out/loop_summary.json"
tail -n 12 "$out/gpu_tests.txt" "$out/profile.txt"
tail -n 30 "$out/loop.txt"
