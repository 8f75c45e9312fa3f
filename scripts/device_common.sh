# Shared by the device scripts. The device brings back only a few files from $OUT, so results are
# written to a scratch directory ($out) and packed into $OUT/results.tgz after every step: what
# finished before a time limit still comes back.
# `step NAME LIMIT_S COMMAND...` runs a command under a time limit, writes its output to
# $out/NAME.txt and appends its exit status and wall time to $out/steps.txt.
source "$(dirname "${BASH_SOURCE[0]}")/device_install.sh"
# Sourced with $out unset, the results would go to a scratch folder and never come back.
dest=${out:?set out, the folder under \$OUT for the results, before sourcing device_common.sh}
mkdir -p "$dest"
out=$(mktemp -d)
pack() { tar czf "$dest/results.tgz.part" -C "$out" . && mv "$dest/results.tgz.part" "$dest/results.tgz"; }
trap pack EXIT
step() {
  local name=$1 limit=$2; shift 2
  local start; start=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "$name rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/steps.txt"
  pack
}
# What ran where, for docs/benchmarks.md: written to $out/env.txt by every device script.
record_env() {
  {
    date -u; id; echo "cores: $(nproc)"; echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm --format=csv,noheader
    # Which CPUs share a memory node: the judge's records name the CPUs its cycles ended on.
    lscpu 2>/dev/null | grep -E '^(Model name|Socket|NUMA|CPU max MHz|CPU min MHz)'
    python -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
    git log -1 --format='commit %h %s' 2>/dev/null
    # The tree shipped is the working tree: say when it differs from that commit.
    git diff --quiet HEAD 2>/dev/null || echo "plus uncommitted changes: $(git diff --stat HEAD | tail -n 1)"
  } > "$out/env.txt" 2>&1
}
# A device call's start: its dependencies installed, and what it runs on recorded.
start_call() { install_wheels; record_env; }
# The loop's dependencies beyond the device's image (gitpython, openai and theirs) travel in .whl
# (`bash scripts/fetch_device_wheels.sh` fills it).
install_wheels() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl || exit 1
  install_qrsup
  qrsup=(python -m qrsup.supervisor.cli)
}

# Nsight Compute's sections for a kernel's limits (throughput against peak, occupancy, launch
# resources, warp stalls, the compute and memory pipes), and the lines of its report worth
# reading first: `ncu "${NCU_SECTIONS[@]/#/--section=}" …`, then `ncu_digest REPORT`.
NCU_SECTIONS=(SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis)
ncu_digest() {
  grep -E '^  [a-z_]+kernel|^  [a-z_]+ \(|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Block Limit|Dynamic Shared|Static Shared|L1/TEX Hit|L2 Hit|Grid Size|Block Size|One or More Eligible|No Eligible|Stall' "$1" | head -n 250
}
