#!/usr/bin/env bash
# The working tree's kernel against the last commit's, on one machine: each is installed into its
# own site, and `qrsup bench kernels/candidates/fast_geqrf.py --suite qr_v2` (contest rule)
# alternates between them ROUNDS times, so drift between the two sides shows as spread, not as a
# gain. Then, unless TESTS=0, the working tree's GPU tests and `qrsup test --suite qr_v2`;
# TESTS=first runs that `qrsup test` before the benches (a short call checks correctness first).
# Usage: [TESTS=0|first] device_ab.sh OUT [ROUNDS] (carry .whl); results come back in
# OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
rounds=${2:-2}
source "$(dirname "$0")/device_common.sh"
install_wheels  # the working tree, into $site
record_env
base_tree=$(mktemp -d)/base
git worktree add --detach "$base_tree" HEAD > /dev/null 2>&1 || exit 1
base_site=$(mktemp -d)
# mktemp's folders are the caller's alone; the judge's contestant runs as another user, and a
# path it cannot read drops out of its PYTHONPATH silently, leaving it the working tree's copy.
chmod a+rx "$base_site" "$(dirname "$base_tree")"
(cd "$base_tree" && python3 -m pip install -q --no-index --no-deps --no-build-isolation \
  --no-cache-dir --target "$base_site" .) || exit 1
echo "base: $(git -C "$base_tree" log -1 --format='%h %s')" >> "$out/env.txt"
bench=("${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2)
test_fast=("${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json")
[ "${TESTS:-1}" = first ] && step test_fast 60 "${test_fast[@]}"
bench_base() { PYTHONPATH=$base_site:$site step "base_$1" 150 "${bench[@]}" --json "$out/base_$1.json"; }
bench_tree() { step "tree_$1" 150 "${bench[@]}" --json "$out/tree_$1.json"; }
# The side that runs second in a round read faster on an H100 (specs neither side changes gained
# 1.3-3.7% there), so the order alternates: base first in odd rounds, the tree first in even ones.
for round in $(seq "$rounds"); do
  if (( round % 2 )); then bench_base "$round"; bench_tree "$round"
  else bench_tree "$round"; bench_base "$round"; fi
done
if [ "${TESTS:-1}" != 0 ]; then
  step gpu_tests 200 python -m pytest -q -p no:cacheprovider -m gpu tests/test_fast_geqrf.py
  [ "${TESTS:-1}" != first ] && step test_fast 60 "${test_fast[@]}"
fi
git worktree remove --force "$base_tree"
cat "$out/env.txt" "$out/steps.txt"
for f in "$out"/base_*.txt "$out"/tree_*.txt; do echo "== $(basename "$f")"; tail -n 20 "$f"; done
# TESTS=0 ran neither: a tail of files never written would fail the call.
[ "${TESTS:-1}" = 0 ] || tail -n 3 "$out/gpu_tests.txt" "$out/test_fast.txt"
