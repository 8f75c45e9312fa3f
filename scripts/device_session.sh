#!/usr/bin/env bash
# One device call for the session's claims; every step writes its own files under OUT.
# Usage: device_session.sh OUT
set -uo pipefail
out=${1:?output directory}
qrsup=(python -m qrsup.supervisor.cli)
source "$(dirname "$0")/device_common.sh"
install_qrsup
record_env
step test_fast 120 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 300 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
[ -n "${PYTEST_GPU:-}" ] && step pytest_gpu 90 python -m pytest -q -m gpu tests
step bench_blocked_wy 150 "${qrsup[@]}" bench kernels/candidates/blocked_wy.py --suite qr_v2 --rule quick --json "$out/bench_blocked_wy.json"
cat "$out/env.txt"
tail -n 22 "$out/bench_fast.txt"
tail -n 4 "$out/pytest_gpu.txt" "$out/test_fast.txt" "$out/bench_blocked_wy.txt"
