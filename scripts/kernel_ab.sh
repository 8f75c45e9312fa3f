#!/usr/bin/env bash
# One device call for a kernel change: where each shape's time goes under the kernel files of
# an earlier revision REV and under the working tree's (scripts/launch_profile.py, same machine,
# same call); each call's time under both, twice in turn (scripts/measure_check_finite.py: the
# launches as the contest's harness makes them, which the per-step profile does not show); then
# `qrsup test` and `qrsup bench --baseline` (contest rule) on the working tree.
# The device's copy has none of this machine's history, so REV's kernels/fast travels as a
# git-ignored folder: `rm -rf .kernel_before && mkdir .kernel_before && git archive REV
# kernels/fast | tar -x -C .kernel_before`, then carry .kernel_before (and .whl).
# Usage: [AB_PROFILES=0] [AB_BENCH=0] kernel_ab.sh OUT [PROFILE_ARGS...]; PROFILE_ARGS go to both
# profiles and both timings (e.g. --shape 640x512). AB_PROFILES=0 skips the per-step profiles
# (about 100 s of a call at four shapes) and AB_BENCH=0 the bench (about 80 s), for a call on
# little device time. Results come back packed in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
shift
before=.kernel_before/kernels/fast
[ -d "$before" ] || { echo "no $before: see this script's header"; exit 2; }
source "$(dirname "$0")/device_common.sh"
start_call
diff -r "$before" kernels/fast | grep -c '^[<>]' | sed 's/^/lines changed in kernels\/fast: /' > "$out/kernel_diff.txt"
after=$(mktemp -d)
cp -r kernels/fast/. "$after/"
use() { rm -rf kernels/fast && cp -r "$1" kernels/fast && install_qrsup; }
use "$before"
# A machine just started runs its first minute at lower clocks (a cold "before" read 640×512 at
# 9.9 ms against 6.4 warm): one discarded profile first.
step warm_up 90 python scripts/launch_profile.py --shape 640x512
if [ "${AB_PROFILES:-1}" != 0 ]; then
  step profile_before 150 python scripts/launch_profile.py "$@"
  use "$after"
  step profile_after 150 python scripts/launch_profile.py "$@"
fi
# Drift between rounds was as large as a small change (2026-12-04: 640×512 before 6.376, then
# 6.274 ms): the sides alternate, and each is read twice.
for round in 1 2; do
  use "$before" && step "time_before_$round" 120 python scripts/measure_check_finite.py "$@"
  use "$after" && step "time_after_$round" 120 python scripts/measure_check_finite.py "$@"
done
step test_fast 180 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
if [ "${AB_BENCH:-1}" != 0 ]; then
  step bench_fast 150 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
fi
cat "$out/env.txt" "$out/steps.txt" "$out/kernel_diff.txt"
# `if`, not `&&`: a step left out must not make the script's own exit status a failure.
if [ -f "$out/profile_after.txt" ]; then
  paste -d '|' <(cut -c1-62 "$out/profile_before.txt") <(cut -c1-62 "$out/profile_after.txt") |
    tail -n 60
fi
tail -n 20 "$out"/time_*.txt
tail -n 4 "$out/test_fast.txt"
if [ -f "$out/bench_fast.txt" ]; then tail -n 22 "$out/bench_fast.txt"; fi
