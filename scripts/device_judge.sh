#!/usr/bin/env bash
# One device call: the judge's qr_v2 figures for docs/benchmarks.md. Usage: device_judge.sh OUT
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_install.sh"
install_qrsup
qrsup() { python -m qrsup.supervisor.cli "$@"; }
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
} > "$out/env.txt" 2>&1
for candidate in ${CANDIDATES-torch_geqrf blocked_wy}; do
  start=$(date +%s.%N)
  qrsup test "kernels/candidates/$candidate.py" --suite qr_v2 --json "$out/test_$candidate.json" \
    > "$out/test_$candidate.txt" 2>&1
  echo "test $candidate rc=$? wall_s=$(python -c "import time; print(round(time.time() - $start, 1))")" >> "$out/walls.txt"
done
for candidate in ${BENCH-torch_geqrf}; do
  start=$(date +%s.%N)
  qrsup bench "kernels/candidates/$candidate.py" --suite qr_v2 ${BENCH_FLAGS:-} \
    --json "$out/bench_$candidate.json" > "$out/bench_$candidate.txt" 2>&1
  echo "bench $candidate rc=$? wall_s=$(python -c "import time; print(round(time.time() - $start, 1))")" >> "$out/walls.txt"
done
cat "$out/env.txt" "$out/walls.txt"
tail -n 25 "$out"/bench_*.txt
grep -h "verdict\|reason" "$out"/test_*.txt
