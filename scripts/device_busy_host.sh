#!/usr/bin/env bash
# One device call for the judge's boundary (issue 17) and honest verdicts on a busy host (issue
# 14): the shipped kernel benched with the boundary on (with torch.geqrf) and off, then alone and
# beside one busy loop per CPU core (quick and contest rules), the GPU cheater tests beside the
# same load, a profile, and the GPU tests.
# Usage: device_busy_host.sh OUT [STEP...]  (carry .whl: scripts/fetch_device_wheels.sh). With no
# STEP, all of: contest_alone contest_off quick_alone quick_busy contest_busy cheaters_busy
# profile pytest_gpu. Also: contest_quiet (no baseline), threads and threads_busy (the thread
# cheater on the smoke suite). The *_busy steps run beside the load; the others alone. The
# *_flicker steps (quick_flicker contest_flicker cheaters_flicker) run beside a load that comes
# and goes, on for 1.3 s and off for 1.7 s, so a judge calibrates under one state and times under
# the other.
set -uo pipefail
out=${1:?output directory}
shift
source "$(dirname "$0")/device_common.sh"
start_call
fast=kernels/candidates/fast_geqrf.py
off=$(mktemp -d) && printf '[judge]\nisolation = "off"\n' > "$off/qrsup.toml"
busy_loops=()
load() {  # one busy loop per CPU core, started once, before the first step that needs them
  [ ${#busy_loops[@]} -gt 0 ] && return
  for _ in $(seq "$(nproc)"); do python3 -c 'while 1: pass' & busy_loops+=($!); done
}
unload() {
  [ ${#busy_loops[@]} -gt 0 ] && kill "${busy_loops[@]}" 2>/dev/null
  [ -n "${flicker:-}" ] && kill -- -"$flicker" 2>/dev/null
  wait 2>/dev/null; busy_loops=(); flicker=
}
flicker() {  # in a process group of its own, so that unload ends the loops it has running
  [ -n "${flicker:-}" ] && return
  setsid bash -c 'while :; do
      for _ in $(seq "$(nproc)"); do python3 -c "while 1: pass" & done
      sleep 1.3; kill $(jobs -p); wait; sleep 1.7
    done' &
  flicker=$!
}
run_step() {
  unload
  case $1 in
    *_busy) load ;;
    *_flicker) flicker ;;
  esac
  case $1 in
    contest_alone) step $1 240 "${qrsup[@]}" bench $fast --suite qr_v2 --baseline --json "$out/$1.json" ;;
    contest_off) step $1 150 "${qrsup[@]}" --workspace "$off" bench $fast --suite qr_v2 --json "$out/$1.json" ;;
    quick_alone | quick_busy | quick_flicker) step $1 150 "${qrsup[@]}" bench $fast --suite qr_v2 --rule quick --json "$out/$1.json" ;;
    contest_quiet | contest_busy | contest_flicker) step $1 200 "${qrsup[@]}" bench $fast --suite qr_v2 --json "$out/$1.json" ;;
    threads | threads_busy)  # the thread cheater on the device's smoke suite
      cheater=tests/cheaters/reads_the_inputs_from_a_thread.py
      step $1 150 "${qrsup[@]}" bench $cheater --suite smoke --json "$out/$1.json" ;;
    cheaters_busy | cheaters_flicker) step $1 150 python -m pytest -q -rA -m gpu tests/test_judge_cheaters.py -p no:cacheprovider ;;
    profile) step $1 90 "${qrsup[@]}" profile $fast --spec 3 ;;
    pytest_gpu) step $1 300 python -m pytest -q -m gpu tests -p no:cacheprovider ;;
    cheater_verdict | cheater_verdict_busy) step $1 150 python scripts/measure_cheater_verdict.py --runs 2 ;;
    *) echo "unknown step: $1" >&2; exit 2 ;;
  esac
}
[ $# -eq 0 ] && set -- contest_alone contest_off quick_alone quick_busy contest_busy cheaters_busy profile pytest_gpu
for name in "$@"; do run_step "$name"; done
unload
cat "$out/env.txt" "$out/steps.txt"
for f in contest_alone contest_quiet contest_off quick_alone quick_busy contest_busy quick_flicker contest_flicker; do
  [ -f "$out/$f.txt" ] && { echo "== $f"; grep -E "verdict|geomean|integrity|ANSWER" "$out/$f.txt" | head -5; }
done
for f in "$out"/threads*.txt; do echo "== $(basename "$f")"; grep -E "verdict|reason|ANSWER" "$f" | head -4; done
for f in cheaters_busy cheaters_flicker pytest_gpu profile; do [ -f "$out/$f.txt" ] && tail -n 3 "$out/$f.txt"; done
reports=$(ls "$out"/*.json 2>/dev/null)
[ -n "$reports" ] && python scripts/window_waits.py $reports
exit 0
