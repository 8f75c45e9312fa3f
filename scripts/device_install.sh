# Sourced by the device scripts: qrsup itself, from this tree, as the `qrsup` package (its folders
# install as subpackages), into $site; the device has no network, and needs none for this. A
# process that outlives its call (scripts/device_long_loop.sh) gets its own QRSUP_SITE, so that a
# later call's install never rewrites the files it imports from.
site=${QRSUP_SITE:-/tmp/site}
install_qrsup() {
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --upgrade \
    --target "$site" . || exit 1
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=220
}
