#!/usr/bin/env bash
# The warp path (kernels/fast/warp_qr.py) on a GPU: its tests; 20×32 timed on the warp path (the
# shipped single-panel class) and on the one-panel Triton launch it replaced, sides alternated
# (scripts/measure_launch_overhead.py); then the claim on the shipped configs: `qrsup test` and
# `qrsup bench --baseline` (contest rule). Usage: device_warp.sh OUT (carry .whl); results come
# back in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_common.sh"
start_call
blocked=$(mktemp --suffix=.toml)
sed '0,/^path = "warp"/s//path = "blocked"/' kernels/fast/configs.toml > "$blocked"
step gpu_tests 150 python -m pytest -q -p no:cacheprovider tests/test_fast_geqrf.py -k "warp or one_launch or direct"
for round in 1 2; do
  step "overhead_warp_$round" 60 python scripts/measure_launch_overhead.py --shape 20x32
  QRSUP_FAST_CONFIGS=$blocked step "overhead_panel_$round" 60 python scripts/measure_launch_overhead.py --shape 20x32
done
step test_fast 60 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 150 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
cat "$out/env.txt" "$out/steps.txt"; tail -n 3 "$out/gpu_tests.txt"
for f in "$out"/overhead_*.txt; do echo "== $(basename "$f")"; tail -n 4 "$f"; done
tail -n 4 "$out/test_fast.txt"; tail -n 22 "$out/bench_fast.txt"
