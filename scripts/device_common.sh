# Shared by the device scripts: `step NAME LIMIT_S COMMAND...` runs a command under a time limit,
# writes its output to $out/NAME.txt and appends its exit status and wall time to $out/steps.txt.
step() {
  local name=$1 limit=$2; shift 2
  local start; start=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "$name rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/steps.txt"
}
