#!/usr/bin/env bash
# One device call: where the shipped kernel's time goes on chosen qr_v2 benchmark specs, as the
# judge runs them (graphs replayed), kernel by kernel (`qrsup profile`, with Nsight Compute's
# counters for the top kernels when NCU=1). scripts/launch_profile.py times steps between host
# events instead, which counts the host's gaps on shapes whose launches outrun it.
# Usage: device_profiles.sh OUT INDEX... (benchmark indices of the qr_v2 suite).
set -uo pipefail
out=${1:?output directory}
shift
source "$(dirname "$0")/device_common.sh"
start_call
ncu=()
[ "${NCU:-0}" = 1 ] && ncu=(--ncu)
for index in "$@"; do
  step "profile_$index" 150 "${qrsup[@]}" profile kernels/candidates/fast_geqrf.py --suite qr_v2 \
    --spec "$index" "${ncu[@]}" --json "$out/profile_$index.json"
done
cat "$out/env.txt" "$out/steps.txt"
for index in "$@"; do head -n 40 "$out/profile_$index.txt"; done
