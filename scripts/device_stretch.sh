#!/usr/bin/env bash
# One device call for the shipped kernel's false integrity failures (issue 14): the harness's
# steps timed in one process (do-nothing, waiting, candidate), with and without a gap between
# exchanges, then benches whose integrity records `scripts/harness_stretch.py` reads.
# Usage: device_stretch.sh OUT [BENCHES]  (carry .whl: scripts/fetch_device_wheels.sh)
set -uo pipefail
out=${1:?output directory}
benches=${2:-3}
source "$(dirname "$0")/device_common.sh"
start_call
measure=(python scripts/measure_harness_stretch.py)
for f in fast_geqrf torch_geqrf; do
  step "stretch_$f" 90 "${measure[@]}" "kernels/candidates/$f.py" --cycles 30
  step "stretch_${f}_gap5" 90 "${measure[@]}" "kernels/candidates/$f.py" --cycles 30 --gap-ms 5
done
step stretch_fast_geqrf_40x352 90 "${measure[@]}" kernels/candidates/fast_geqrf.py --shape 40x352 --count 13 --cycles 20
for i in $(seq "$benches"); do
  step "bench_$i" 200 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/bench_$i.json"
done
cat "$out/env.txt" "$out/steps.txt"
for f in "$out"/stretch_*.txt; do echo "== $(basename "$f")"; cat "$f"; done
for f in "$out"/bench_*.txt; do echo "== $(basename "$f")"; grep -E "verdict|geomean|integrity" "$f" | head -5; done
(cd scripts && python harness_stretch.py "$out"/bench_*.json)
exit 0
