#!/usr/bin/env bash
# One device call: the GPU-marked tests, a profile of the shipped kernel (with Nsight Compute),
# and a bounded headless tuner run on qr_v2 starting from the shipped kernel.
# Usage: device_loop.sh OUT [MINUTES]. The device has no network: the wheels the loop needs
# beyond the device's image (gitpython, openai and their dependencies) travel in .whl.
set -uo pipefail
out=${1:?output directory}
minutes=${2:-5}
source "$(dirname "$0")/device_common.sh"
install_wheels
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git --version; } > "$out/env.txt" 2>&1
[ -z "${ONLY_LOOP:-}" ] && step gpu_tests 100 python -m pytest -q -m gpu tests/test_fast_geqrf.py tests/test_profile.py
[ -z "${ONLY_LOOP:-}" ] && step profile 90 "${qrsup[@]}" profile kernels/candidates/fast_geqrf.py --suite qr_v2 --spec 3 \
  --ncu --json "$out/profile_fast_spec3.json"
workspace=/tmp/qrsup-gpu-ws
step loop $(( minutes * 60 + 120 )) "${qrsup[@]}" run --headless --agents 1 --budget "${minutes}m" \
  --workspace "$workspace" --init
python - "$workspace" > "$out/loop_summary.json" <<'PY'
import json, sys
from pathlib import Path
from qrsup.agents.store import Store
store = Store(Path(sys.argv[1]) / "runs/default/store.sqlite")
evaluations = store.evaluations()
promotions = store.promotions()
first = store.candidate(promotions[0]["candidate_id"])
last = store.candidate(store.incumbent_id())
wall = sum(json.loads(r["report"]).get("phases_s", {}).get("wall", 0.0) for r in evaluations)
print(json.dumps({
    "evaluations": len(evaluations),
    "judge_wall_s": wall,
    "evaluations_per_gpu_hour": len(evaluations) / wall * 3600 if wall else None,
    "iterations": len(store.iterations("a1")),
    "profiles": [{"candidate": p["candidate_id"], "ok": p["ok"], "seconds": p["seconds"]} for p in store.profiles()],
    "incumbent_before": {"id": first.id, "geomean_ns": first.geomean_ns},
    "incumbent_after": {"id": last.id, "geomean_ns": last.geomean_ns},
    "promotions": [dict(p) for p in promotions],
}, indent=2, default=str))
PY
cp "$workspace/log.md" "$out/loop_log.md" 2>/dev/null
cp "$workspace/runs/default/agents/a1/agent.log" "$out/loop_agent.log" 2>/dev/null
cat "$out/steps.txt" "$out/loop_summary.json"
tail -n 12 "$out/gpu_tests.txt" "$out/profile.txt"
tail -n 30 "$out/loop.txt"
