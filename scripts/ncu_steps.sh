#!/usr/bin/env bash
# One device call: Nsight Compute's view of the shipped kernel's steps on one shape: throughput
# against peak, occupancy, launch resources, warp stalls and the memory and compute pipes, for
# the launches of the second factorization (the first compiles) whose kernel names match.
# Usage: ncu_steps.sh OUT SHAPE SKIP COUNT [REGEX], e.g. ncu_steps.sh OUT 640x512 71 9: SKIP is
# how many matching launches a factorization makes (the first's are passed over), COUNT how
# many of the second's to profile. Results come back packed in OUT/results.tgz.
set -uo pipefail
out=${1:?output directory}
shape=${2:?BATCHxN} skip=${3:?launches to skip} count=${4:?launches to profile}
regex=${5:-qr_}
source "$(dirname "$0")/device_common.sh"
start_call
batch=${shape%x*} n=${shape#*x}
step "ncu_$shape" 400 ncu --target-processes all -k "regex:$regex" --launch-skip "$skip" \
  --launch-count "$count" "${NCU_SECTIONS[@]/#/--section=}" python -c "
import torch
from qrsup.kernels.fast.geqrf import geqrf
a = torch.randn($batch, $n, $n, device='cuda')
for _ in range(2):
    geqrf(a, check_finite=False)
torch.cuda.synchronize()
"
cat "$out/env.txt" "$out/steps.txt"
ncu_digest "$out/ncu_$shape.txt"
