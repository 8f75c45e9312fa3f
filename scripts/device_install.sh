# Sourced by the device scripts: qrsup itself, from this tree, as the `qrsup` package (its folders
# install as subpackages), into /tmp/site; the device has no network, and needs none for this.
install_qrsup() {
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir \
    --target /tmp/site . || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 COLUMNS=220
}
