#!/usr/bin/env bash
# One device call for the shapes qr_v2's lists leave out (issue 12): the shipped kernel on the
# `edges` suite (odd n on both sides of every shape class's bound and up to 4097, batch 1 and
# 1000, every case), gated by qrsup's checker (`qrsup test --suite edges`) and, exported as one
# file, by the contest's own harness (`scripts/contest_eval.py --suite edges --mode test`), a
# checker independent of this repository. Usage: device_edges.sh OUT HARNESS_DIR, where
# HARNESS_DIR holds the contest's qr_v2 files and utils.py (scripts/contest_eval.py says which);
# carry it and .whl.
set -uo pipefail
out=${1:?output directory}
harness=${2:?the contest harness folder}
source "$(dirname "$0")/device_common.sh"
install_wheels
record_env
fast=kernels/candidates/fast_geqrf.py
step test_edges 300 "${qrsup[@]}" test $fast --suite edges --json "$out/test_edges.json"
step export 60 "${qrsup[@]}" export $fast -o "$out/submission.py" --force
step contest_edges 420 python scripts/contest_eval.py "$harness" "$out/submission.py" \
  --mode test --suite edges --json "$out/contest_edges.json"
cat "$out/env.txt" "$out/steps.txt"
tail -n 8 "$out/test_edges.txt"
grep -vE "^test\.[0-9]+\.(std|err|best|worst|runs)" "$out/contest_edges.txt" | tail -n 160
