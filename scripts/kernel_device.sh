#!/usr/bin/env bash
# One device call for the fast kernel's structural work: the sweep (scripts/kernel_sweep.py), then
# the claim on the configs it chose: `qrsup test` and `qrsup bench --baseline` (contest rule), and
# where each shape's time goes, step by step (scripts/launch_profile.py).
# Usage: [SWEEP_LIMIT_S=300] [GPU_TESTS=1] kernel_device.sh OUT [SWEEP_ARGS...] (keep the sweep's
# --check-s and --time-s 60 s under SWEEP_LIMIT_S, for its start and its closing timing and
# profile, and the whole within a call's 600 s); results come back packed in OUT/results.tgz,
# and the chosen configs and the short tables as separate files in OUT. Carry .whl.
set -uo pipefail
out=${1:?output directory}
shift
results=$out
source "$(dirname "$0")/device_common.sh"
# The chosen configs replace the shipped file for the claim below; a warm machine keeps the
# tree between calls, so the next call would otherwise start from this call's choice.
shipped=$(mktemp) && cp kernels/fast/configs.toml "$shipped"
trap 'cp "$shipped" kernels/fast/configs.toml; pack' EXIT  # pack: device_common.sh's own trap
install_wheels  # the CLI imports the proposers, whose wheels travel in .whl
record_env
step sweep "${SWEEP_LIMIT_S:-300}" python scripts/kernel_sweep.py --out "$out/sweep" "$@"
if [ -s "$out/sweep/configs.toml" ]; then
  cp "$out/sweep/configs.toml" kernels/fast/configs.toml
  cp "$out/sweep/configs.toml" "$results/configs.toml"
  install_qrsup  # again: the installed copy carries the chosen configs
fi
# The judge's Triton cache is per candidate source; seed it with what the sweep compiled.
digest=$(python -c "import hashlib; print(hashlib.sha256(open('kernels/candidates/fast_geqrf.py', 'rb').read()).hexdigest()[:16])")
mkdir -p "$HOME/.cache/qrsup/triton/$digest" && cp -r "$HOME/.triton/cache/." "$HOME/.cache/qrsup/triton/$digest/"
step test_fast 40 "${qrsup[@]}" test kernels/candidates/fast_geqrf.py --suite qr_v2 --json "$out/test_fast.json"
step bench_fast 120 "${qrsup[@]}" bench kernels/candidates/fast_geqrf.py --suite qr_v2 --baseline --json "$out/bench_fast.json"
step launch_profile 60 python scripts/launch_profile.py  # device time per plan step, by kind
# GPU_TESTS=1: the kernel's GPU tests on the chosen configs too (the qr_v2 test specs, graph
# replay, direct launches in any layout, the cuBLAS split products).
if [ "${GPU_TESTS:-0}" = 1 ]; then
  step gpu_tests 120 python -m pytest -q -p no:cacheprovider -m gpu tests/test_fast_geqrf.py
fi
cp "$out/sweep.txt" "$out/bench_fast.txt" "$out/test_fast.txt" "$out/launch_profile.txt" "$results/" 2>/dev/null
cat "$out/env.txt" "$out/steps.txt"
tail -n 50 "$out/sweep.txt"
tail -n 4 "$out/test_fast.txt"
tail -n 22 "$out/bench_fast.txt"
tail -n 60 "$out/launch_profile.txt"
if [ "${GPU_TESTS:-0}" = 1 ]; then tail -n 3 "$out/gpu_tests.txt"; fi
