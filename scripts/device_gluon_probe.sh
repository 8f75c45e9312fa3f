#!/usr/bin/env bash
# One device call: the Gluon update probe (scripts/gluon_apply_probe.py) at 32 and 64 columns a
# program, each kernel checked against float64 and timed beside the shipped Triton one, on the
# shape given (default 640×512, the shape whose update is most of its time).
# Usage: [NCU=1] device_gluon_probe.sh OUT [BATCH N]. With NCU set, Nsight Compute also reads
# the first launch of each update kernel at BN = 64 (the Gluon apply walk and fused update, the
# shipped fused update): what stalls them at half the bandwidth (docs/benchmarks.md, 2026-12-04,
# fifth session). Results come back packed in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
batch=${2:-640} n=${3:-512}
source "$(dirname "$0")/device_common.sh"
start_call
for bn in 32 64; do
  step "probe_bn$bn" 240 python scripts/gluon_apply_probe.py --batch "$batch" --n "$n" --bn "$bn"
done
if [ -n "${NCU:-}" ]; then
  for kernel in apply_walk update_fused qr_update_kernel; do
    step "ncu_$kernel" 200 ncu --target-processes all -k "regex:^$kernel\$" --launch-count 1 \
      "${NCU_SECTIONS[@]/#/--section=}" python scripts/gluon_apply_probe.py --batch "$batch" \
      --n "$n" --bn 64 --ahead 0 --fixed-stride 1
  done
fi
cat "$out/env.txt" "$out/steps.txt"
tail -n 12 "$out"/probe_bn*.txt
for report in "$out"/ncu_*.txt; do [ -f "$report" ] && ncu_digest "$report"; done
