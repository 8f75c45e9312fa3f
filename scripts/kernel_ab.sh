#!/usr/bin/env bash
# One device call for a kernel change: where each shape's time goes under the kernel files of
# revision REV and under the working tree's (scripts/launch_profile.py, same machine, same call),
# then `qrsup test` and `qrsup bench --baseline` (contest rule) on the working tree.
# Usage: kernel_ab.sh OUT REV [PROFILE_ARGS...]; PROFILE_ARGS go to both profiles (e.g. --shape
# 640x512). Results come back packed in OUT/results.tgz. Carry .whl.
set -uo pipefail
out=${1:?output directory}
rev=${2:?revision whose kernels/fast is the "before"}
shift 2
source "$(dirname "$0")/device_common.sh"
install_wheels
record_env
git diff --stat "$rev" -- kernels/fast > "$out/kernel_diff.txt"
after=$(mktemp -d)
cp -r kernels/fast/. "$after/"
git checkout "$rev" -- kernels/fast && install_qrsup
step profile_before 150 python scripts/launch_profile.py "$@"
rm -rf kernels/fast && mkdir -p kernels/fast && cp -r "$after/." kernels/fast/ && install_qrsup
step profile_after 150 python scripts/launch_profile.py "$@"
step test_fast 180 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 150 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
cat "$out/env.txt" "$out/steps.txt" "$out/kernel_diff.txt"
paste -d '|' <(cut -c1-62 "$out/profile_before.txt") <(cut -c1-62 "$out/profile_after.txt") | tail -n 60
tail -n 4 "$out/test_fast.txt"
tail -n 22 "$out/bench_fast.txt"
