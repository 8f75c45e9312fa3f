#!/usr/bin/env bash
# One device call for the judge's boundary (issue 17) and honest verdicts on a busy host (issue
# 14): the shipped kernel benched with the boundary on (with torch.geqrf) and off, then alone and
# beside one busy loop per CPU core (quick and contest rules), the GPU cheater tests beside the
# same load, a profile, and the GPU tests. Usage: device_busy_host.sh OUT  (carry .whl: scripts/fetch_device_wheels.sh)
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_common.sh"
install_wheels
record_env
fast=kernels/candidates/fast_geqrf.py
off=$(mktemp -d) && printf '[judge]\nisolation = "off"\n' > "$off/qrsup.toml"
step contest_alone 150 "${qrsup[@]}" bench $fast --suite qr_v2 --baseline --json "$out/contest_alone.json"
step contest_off 150 "${qrsup[@]}" --workspace "$off" bench $fast --suite qr_v2 --json "$out/contest_off.json"
step quick_alone 150 "${qrsup[@]}" bench $fast --suite qr_v2 --rule quick --json "$out/quick_alone.json"
busy() { for _ in $(seq "$(nproc)"); do python3 -c 'while 1: pass' & done; }
busy
step quick_busy 150 "${qrsup[@]}" bench $fast --suite qr_v2 --rule quick --json "$out/quick_busy.json"
step contest_busy 200 "${qrsup[@]}" bench $fast --suite qr_v2 --json "$out/contest_busy.json"
step cheaters_busy 120 python -m pytest -q -m gpu tests/test_judge_cheaters.py -p no:cacheprovider
kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
step profile 90 "${qrsup[@]}" profile $fast --spec 3
step pytest_gpu 120 python -m pytest -q -m gpu tests -p no:cacheprovider
cat "$out/env.txt" "$out/steps.txt"
for f in contest_alone contest_off quick_alone quick_busy contest_busy; do echo "== $f"; grep -E "verdict|geomean|integrity" "$out/$f.txt" | head -5; done
tail -n 3 "$out/cheaters_busy.txt" "$out/pytest_gpu.txt" "$out/profile.txt"
