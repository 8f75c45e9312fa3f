#!/usr/bin/env bash
# A headless tuner loop longer than one device call (each call runs at most 10 minutes): `start`
# launches it in its own process session, which outlives the call while the machine stays warm;
# later calls take a `snapshot` (the summary so far) and, once it has ended, `collect` it.
# Usage:
#   device_long_loop.sh start OUT MINUTES GPU [RUN OPTION...]   (carry .whl)
#   device_long_loop.sh snapshot OUT
#   device_long_loop.sh collect OUT [WAIT_S]
# The loop's files and its own install stay in /tmp/qrsup-long on the device; what comes back is
# packed into OUT/results.tgz (the summary, the store for scripts/plot_progress.py, log.md and the
# agent logs).
set -uo pipefail
verb=${1:?start, snapshot or collect}
out=${2:?output directory}
shift 2
long=/tmp/qrsup-long
workspace=$long/workspace
export QRSUP_SITE=$long/site
source "$(dirname "$0")/device_common.sh"

summarize() {
  python scripts/loop_summary.py --workspace "$workspace" > "$out/loop_summary.json" 2>&1
  python -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
    "$workspace/runs/default/store.sqlite" "$out/store.sqlite"  # a consistent copy of a live store
  cp "$workspace/log.md" "$out/loop_log.md" 2>/dev/null
  cp "$long/run.txt" "$out/loop_run.txt" 2>/dev/null
  for log in "$workspace"/runs/default/agents/*/agent.log; do
    [ -f "$log" ] && cp "$log" "$out/$(basename "$(dirname "$log")")_agent.log"
  done
  pack
  tail -n 25 "$long/run.txt"
  head -c 3000 "$out/loop_summary.json"
}

case $verb in
  start)
    minutes=${1:?minutes}; gpu=${2:?gpu}; shift 2
    rm -rf "$long" && mkdir -p "$long"
    install_wheels
    date -u +%s > "$long/started"
    setsid nohup "${qrsup[@]}" run --headless --agents 1 --gpus "$gpu" --budget "${minutes}m" \
      --workspace "$workspace" --init "$@" > "$long/run.txt" 2>&1 < /dev/null &
    echo $! > "$long/pid"
    sleep 5
    echo "started the loop (pid $(cat "$long/pid")) for $minutes minutes on GPU $gpu"
    tail -n 5 "$long/run.txt"
    ;;
  snapshot)
    export PYTHONPATH=$QRSUP_SITE PYTHONUNBUFFERED=1
    summarize
    ;;
  collect)
    export PYTHONPATH=$QRSUP_SITE PYTHONUNBUFFERED=1
    wait_s=${1:-300}
    deadline=$(( $(date +%s) + wait_s ))
    while kill -0 "$(cat "$long/pid")" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 5; done
    kill -0 "$(cat "$long/pid")" 2>/dev/null && echo "the loop is still running after ${wait_s}s"
    echo "loop wall: $(( $(date +%s) - $(cat "$long/started") )) s"
    summarize
    ;;
  *) echo "unknown verb: $verb" >&2; exit 2 ;;
esac
