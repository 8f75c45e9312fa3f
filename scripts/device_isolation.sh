#!/usr/bin/env bash
# One device call for the judge's boundary (issue 17): its start-up cost, the shipped kernel
# benched with the boundary on and off in the same run, the GPU tests, the isolation and cheater
# tests, and a profile. Usage: device_isolation.sh OUT  (carry .whl: scripts/fetch_device_wheels.sh)
set -uo pipefail
out=${1:?output directory}
source "$(dirname "$0")/device_common.sh"
install_wheels
{
  date -u; id
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
} > "$out/env.txt" 2>&1
off=$(mktemp -d) && printf '[judge]\nisolation = "off"\n' > "$off/qrsup.toml"
step cost 150 python scripts/measure_isolation_cost.py --device cuda --rounds 5
step bench_on 200 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/bench_on.json"
step bench_off 200 "${qrsup[@]}" --workspace "$off" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/bench_off.json"
step profile 90 "${qrsup[@]}" profile kernels/candidates/fast_geqrf.py --spec 3
step pytest_gpu 150 python -m pytest -q -m gpu tests -p no:cacheprovider
step pytest_isolation 200 python -m pytest -q tests/test_judge_isolation.py tests/test_judge_cheaters.py tests/test_triton_cache.py -p no:cacheprovider
cat "$out/env.txt" "$out/steps.txt"
tail -n 8 "$out/cost.txt"
tail -n 4 "$out/bench_on.txt" "$out/bench_off.txt" "$out/pytest_gpu.txt" "$out/pytest_isolation.txt" "$out/profile.txt"
