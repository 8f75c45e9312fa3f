#!/usr/bin/env bash
# Device steps for the judge's boundary (issue 17): its start-up cost, the shipped kernel benched
# with the boundary on (with torch.geqrf) and off in the same call, the GPU tests, the isolation
# and cheater tests, a profile, and where an export's time goes (export_cycle, issue 14).
# Usage: device_isolation.sh OUT [STEP...] (carry .whl: scripts/fetch_device_wheels.sh). With no
# STEP, all of: bench_on bench_off cost pytest_gpu pytest_isolation profile. PYTEST_K picks GPU
# tests by -k expression. Set CUDA_VISIBLE_DEVICES to keep the steps on one GPU.
set -uo pipefail
out=${1:?output directory}
shift
source "$(dirname "$0")/device_common.sh"
start_call
fast=kernels/candidates/fast_geqrf.py
off=$(mktemp -d) && printf '[judge]\nisolation = "off"\n' > "$off/qrsup.toml"
run_step() {
  case $1 in
    bench_on) step bench_on 200 "${qrsup[@]}" bench $fast --suite qr_v2 --baseline --json "$out/bench_on.json" ;;
    bench_off) step bench_off 200 "${qrsup[@]}" --workspace "$off" bench $fast --suite qr_v2 --json "$out/bench_off.json" ;;
    cost) step cost 150 python scripts/measure_isolation_cost.py --device cuda --rounds 5 ;;
    pytest_gpu) step pytest_gpu "${PYTEST_LIMIT_S:-400}" python -m pytest -v -rA --tb=short -m gpu \
      ${PYTEST_K:+-k "$PYTEST_K"} tests -p no:cacheprovider ;;
    pytest_isolation) step pytest_isolation 240 python -m pytest -q tests/test_judge_isolation.py \
      tests/test_judge_cheaters.py tests/test_triton_cache.py -p no:cacheprovider ;;
    profile) step profile 90 "${qrsup[@]}" profile $fast --spec 3 ;;
    export_cycle)  # where an export's time goes (issue 14): 640x512 and 60x1024, disk and tmpfs
      step export_cycle 150 bash -c 'for s in 640x512 60x1024; do
        python scripts/measure_export_cycle.py --spec $s --dirs "${TMPDIR:-/tmp}" /dev/shm; done' ;;
    *) echo "unknown step: $1" >&2; exit 2 ;;
  esac
}
[ $# -eq 0 ] && set -- bench_on bench_off cost pytest_gpu pytest_isolation profile
for name in "$@"; do run_step "$name"; done
cat "$out/env.txt" "$out/steps.txt"
for f in cost bench_on bench_off pytest_gpu pytest_isolation profile; do
  [ -f "$out/$f.txt" ] && { echo "== $f"; tail -n 6 "$out/$f.txt"; }
done
