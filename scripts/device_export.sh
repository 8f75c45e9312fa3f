#!/usr/bin/env bash
# One device call for the one-file contest export (issue 16): the shipped kernel exported with
# `qrsup export`, the export and the candidate benched by `qrsup bench` (contest rule) in the same
# call, then the export run through the contest's own eval.py (test and benchmark modes) and its
# per-spec means set beside qrsup's. Usage: device_export.sh OUT HARNESS_DIR, where HARNESS_DIR
# holds the contest's qr_v2 files and utils.py (scripts/contest_eval.py says which) and travels
# with the call (carry it, and .whl). Set CUDA_VISIBLE_DEVICES to keep the steps on one GPU, and
# CANDIDATE_JSON to a `qrsup bench --json` of the candidate from the same call to skip its bench;
# NO_BENCH=1 skips both benches (the contest's eval.py alone, for a call short of time).
# SUITE=edges instead gates a qrsup suite's test specs with both checkers, no benches: `qrsup test
# --suite edges` on the candidate, and the export through eval.py's test mode on the same specs
# (`scripts/contest_eval.py --suite`), a checker independent of this repository (issue 12's
# shapes nobody benchmarks).
set -uo pipefail
out=${1:?output directory}
harness=${2:?the contest harness folder}
source "$(dirname "$0")/device_common.sh"
start_call
fast=kernels/candidates/fast_geqrf.py
step export 60 "${qrsup[@]}" export $fast -o "$out/submission.py" --force
wc -c "$out/submission.py" | tee -a "$out/steps.txt"
qrsup_json=()
modes=(--mode test benchmark)
if [ -n "${SUITE:-}" ]; then
  step test_suite 300 "${qrsup[@]}" test $fast --suite "$SUITE" --json "$out/test_suite.json"
  modes=(--mode test --suite "$SUITE")
elif [ -z "${NO_BENCH:-}" ]; then
  if [ -n "${CANDIDATE_JSON:-}" ]; then  # the candidate's bench from earlier in the same call
    cp "$CANDIDATE_JSON" "$out/bench_candidate.json"
  else
    step bench_candidate 200 "${qrsup[@]}" bench $fast --suite qr_v2 --json "$out/bench_candidate.json"
  fi
  step bench_export 200 "${qrsup[@]}" bench "$out/submission.py" --suite qr_v2 --json "$out/bench_export.json"
  qrsup_json=(--qrsup-json "$out/bench_candidate.json" "$out/bench_export.json")
fi
step contest_eval 420 python scripts/contest_eval.py "$harness" "$out/submission.py" \
  "${modes[@]}" "${qrsup_json[@]}" --json "$out/contest_eval.json"
cat "$out/steps.txt"
grep -E "verdict|geomean" "$out"/bench_*.txt "$out"/test_suite.txt 2>/dev/null
grep -vE "^(benchmark|test)\.[0-9]+\.(std|err|best|worst|runs)" "$out/contest_eval.txt" | tail -n 140
