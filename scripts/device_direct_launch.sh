#!/usr/bin/env bash
# Recorded launches made straight from the host (kernels/fast/direct_launch.py) on a GPU: their
# tests; each call's time with `direct_launch` off (graph replay, or Triton's dispatch where
# `graph` is off) and on, sides alternated (scripts/measure_check_finite.py); 20×32's host path
# piece by piece (scripts/measure_host_path.py); then `qrsup test` and `qrsup bench --baseline`
# (contest rule) on the shipped configs. Usage: device_direct_launch.sh OUT (carry .whl);
# results come back in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_common.sh"
start_call
step gpu_tests 200 python -m pytest -q -p no:cacheprovider tests/test_fast_geqrf.py -k "warp or one_launch or direct or hook or graph"
off=$(mktemp --suffix=.toml)
sed 's/^direct_launch = true/direct_launch = false/' kernels/fast/configs.toml > "$off"
shapes=(--shape 40x176 --shape 40x352 --shape 640x512 --shape 60x1024)
for round in 1 2; do
  QRSUP_FAST_CONFIGS=$off step "time_off_$round" 150 python scripts/measure_check_finite.py --reps 15 "${shapes[@]}"
  step "time_on_$round" 150 python scripts/measure_check_finite.py --reps 15 "${shapes[@]}"
done
step host_path 60 python scripts/measure_host_path.py --rounds 2 --pieces
step test_fast 90 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 180 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
cat "$out/env.txt" "$out/steps.txt"; tail -n 3 "$out/gpu_tests.txt"
for f in "$out"/time_*.txt; do echo "== $(basename "$f")"; tail -n 8 "$f"; done
cat "$out/host_path.txt"; tail -n 4 "$out/test_fast.txt"; tail -n 22 "$out/bench_fast.txt"
