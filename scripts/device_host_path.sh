#!/usr/bin/env bash
# The one-launch call's host path on a GPU: the tests of the direct launch; 20×32 timed as the
# contest times a call under an earlier revision's kernels/fast and the working tree's, sides
# alternated, with the working tree's host path piece by piece (scripts/measure_host_path.py);
# then `qrsup test` and `qrsup bench --baseline` (contest rule) on the working tree.
# The earlier revision travels as a git-ignored folder: `rm -rf .kernel_before && mkdir
# .kernel_before && git archive REV kernels/fast | tar -x -C .kernel_before`, carried with .whl.
# Usage: device_host_path.sh OUT; results come back in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
before=.kernel_before/kernels/fast
[ -d "$before" ] || { echo "no $before: see this script's header"; exit 2; }
source "$(dirname "$0")/device_common.sh"
start_call
step gpu_tests 150 python -m pytest -q -p no:cacheprovider tests/test_fast_geqrf.py -k "warp or one_launch or direct or hook or gather"
after=$(mktemp -d)
cp -r kernels/fast/. "$after/"
use() { rm -rf kernels/fast && cp -r "$1" kernels/fast && install_qrsup; }
for round in 1 2; do
  use "$before" && step "host_before_$round" 60 python scripts/measure_host_path.py --rounds 1
  use "$after" && step "host_after_$round" 60 python scripts/measure_host_path.py --rounds 1 --pieces
done
step test_fast 90 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 180 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
cat "$out/env.txt" "$out/steps.txt"; tail -n 3 "$out/gpu_tests.txt"
for f in "$out"/host_*.txt; do echo "== $(basename "$f")"; cat "$f"; done
tail -n 4 "$out/test_fast.txt"; tail -n 22 "$out/bench_fast.txt"
