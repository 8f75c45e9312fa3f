#!/usr/bin/env bash
# The one-launch call's host path on a GPU: the tests of the direct launch; 20×32's host path piece
# by piece and timed as the contest times a call, launched directly and through Triton's runner
# (scripts/measure_host_path.py); the small shapes' host and device time per call
# (scripts/measure_launch_overhead.py) and their kernels (`qrsup profile`, benchmarks 1 and 2);
# then `qrsup test` and `qrsup bench --baseline` (contest rule) on the shipped configs.
# Usage: device_host_path.sh OUT (carry .whl); results come back in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_common.sh"
install_wheels
record_env
step gpu_tests 150 python -m pytest -q -p no:cacheprovider tests/test_fast_geqrf.py -k "warp or one_launch or single_launch or hook"
step host_path 120 python scripts/measure_host_path.py --shape 20x32 --rounds 2
step overhead 120 python scripts/measure_launch_overhead.py --shape 20x32 --shape 40x176 --shape 40x352
for index in 1 2; do
  step "profile_$index" 120 "${qrsup[@]}" profile kernels/candidates/fast_geqrf.py --suite qr_v2 \
    --spec "$index" --json "$out/profile_$index.json"
done
step test_fast 90 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 180 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
cat "$out/env.txt" "$out/steps.txt"; tail -n 3 "$out/gpu_tests.txt"
cat "$out/host_path.txt" "$out/overhead.txt"
for index in 1 2; do head -n 30 "$out/profile_$index.txt"; done
tail -n 4 "$out/test_fast.txt"; tail -n 22 "$out/bench_fast.txt"
