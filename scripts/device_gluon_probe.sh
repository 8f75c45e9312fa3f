#!/usr/bin/env bash
# One device call: the Gluon update probe (scripts/gluon_apply_probe.py) at 32 and 64 columns a
# program, each kernel checked against float64 and timed beside the shipped Triton one, on the
# shape given (default 640×512, the shape whose update is most of its time).
# Usage: device_gluon_probe.sh OUT [BATCH N]. Results come back packed in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
batch=${2:-640} n=${3:-512}
source "$(dirname "$0")/device_common.sh"
install_wheels
record_env
for bn in 32 64; do
  step "probe_bn$bn" 240 python scripts/gluon_apply_probe.py --batch "$batch" --n "$n" --bn "$bn"
done
cat "$out/env.txt" "$out/steps.txt"
tail -n 12 "$out"/probe_bn*.txt
