#!/usr/bin/env bash
# On the device: `device_ray.sh stage` (carry .ray-whl/a) keeps the first half of Ray's wheel
# and its dependencies in /tmp/ray-parts; `device_ray.sh install` (carry .ray-whl/b, in the next
# call, the machine still warm) joins the halves and installs Ray into $QRSUP_SITE or /tmp/site.
# Both halves come from scripts/fetch_device_ray.sh.
set -euo pipefail
parts=/tmp/ray-parts
case ${1:?stage or install} in
  stage)
    mkdir -p "$parts" && cp .ray-whl/a/* "$parts/"
    ls -la "$parts"
    ;;
  install)
    cp .ray-whl/b/part-ab "$parts/"
    mkdir -p /tmp/ray-joined && wheel=/tmp/ray-joined/$(cat "$parts/ray-wheel-name.txt")
    cat "$parts/part-aa" "$parts/part-ab" > "$wheel"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "${QRSUP_SITE:-/tmp/site}" "$wheel" "$parts"/*.whl
    PYTHONPATH=${QRSUP_SITE:-/tmp/site} python3 -c "import ray; print('ray', ray.__version__)"
    ;;
  *) echo "unknown verb: $1" >&2; exit 2 ;;
esac
