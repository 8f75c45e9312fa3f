#!/usr/bin/env bash
# Ray for a device machine with no network, in two halves: its wheel (about 79 MB) is larger than
# what one device call carries (64 MiB with the working tree), so it travels split over two calls
# while the machine stays warm. Fills .ray-whl/a (the first half and the small dependencies the
# device's image lacks) and .ray-whl/b (the second half); `scripts/device_ray.sh` joins them there.
# Run once from the repository root.
set -euo pipefail
ray_version=$(python -c "import ray; print(ray.__version__)" 2>/dev/null || echo 2.60.0)
grep -qx '/.ray-whl/' .git/info/exclude 2>/dev/null || echo '/.ray-whl/' >> .git/info/exclude
rm -rf .ray-whl && mkdir -p .ray-whl/a .ray-whl/b .ray-whl/whole
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .ray-whl/whole "ray==$ray_version"
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .ray-whl/a \
  jsonschema==4.25.1 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==0.28.0
wheel=$(ls .ray-whl/whole/ray-*.whl)
basename "$wheel" > .ray-whl/a/ray-wheel-name.txt
size=$(stat -c %s "$wheel")
split -b $(( size / 2 + 1 )) "$wheel" .ray-whl/part-
mv .ray-whl/part-aa .ray-whl/a/ && mv .ray-whl/part-ab .ray-whl/b/
rm -rf .ray-whl/whole
du -sh .ray-whl/a .ray-whl/b
