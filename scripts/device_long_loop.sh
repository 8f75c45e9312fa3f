#!/usr/bin/env bash
# A headless tuner session longer than one device call (each call runs at most 10 minutes): `start`
# launches it in its own process session, which outlives the call while the machine stays warm;
# later calls take a `snapshot` (the summary so far) and, once it has ended, `collect` it.
# Usage:
#   device_long_loop.sh start OUT MINUTES GPUS [RUN OPTION...]   (carry .whl; one agent per GPU
#                                                                of the list, e.g. 0 or 0,1)
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
  cp "$long/holders.jsonl" "$out/holders.jsonl" 2>/dev/null
  for log in "$workspace"/runs/default/agents/*/agent.log; do
    [ -f "$log" ] && cp "$log" "$out/$(basename "$(dirname "$log")")_agent.log"
  done
  pack
  tail -n 25 "$long/run.txt"
  head -c 3000 "$out/loop_summary.json"
}

case $verb in
  start)
    minutes=${1:?minutes}; gpus=${2:?gpus}; shift 2
    agents=$(( $(tr -cd , <<< "$gpus" | wc -c) + 1 ))
    rm -rf "$long" && mkdir -p "$long"
    install_wheels
    date -u +%s > "$long/started"
    mkdir -p "$workspace/runs/default"  # as scripts/device_multi_gpu.sh does, for the sampler
    setsid nohup "${qrsup[@]}" run --headless --agents "$agents" --gpus "$gpus" --budget "${minutes}m" \
      --workspace "$workspace" --init "$@" > "$long/run.txt" 2>&1 < /dev/null &
    echo $! > "$long/pid"
    # Which agent's processes use each GPU, and which lease it, through the run (issue 15).
    setsid nohup python scripts/sample_gpu_holders.py "$workspace/runs/default" \
      "$long/holders.jsonl" > "$long/sampler.txt" 2>&1 < /dev/null &
    sleep 5
    echo "started $agents agents (pid $(cat "$long/pid")) for $minutes minutes on GPUs $gpus"
    tail -n 5 "$long/run.txt"
    ;;
  snapshot | collect)
    [ -f "$long/pid" ] || { echo "no session was started on this machine: run start first" >&2; exit 2; }
    ;;&
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
    pkill -f sample_gpu_holders.py || true
    summarize
    ;;
  *) echo "unknown verb: $verb" >&2; exit 2 ;;
esac
