#!/usr/bin/env bash
# Download, into .whl/ (git-ignored), the wheels the loop needs on a device machine with no network
# beyond its image: gitpython, openai, textual and watchdog with the dependencies the image lacks, for
# its CPython 3.12 on x86_64 (the GPU-holder sampler runs the TUI's own fleet sampler).
# Run once from the repository root before a device call that names `.whl` in `carry`.
set -euo pipefail
wheels=(
  annotated-types==0.8.0 gitdb==4.0.12 gitpython==3.2.1 httpcore2==2.16.2 httpx2==2.16.2
  jiter==0.19.0 mdit-py-plugins==0.7.0 openai==3.57.0 platformdirs==4.14.8 pydantic==2.14.4 pydantic-core==2.50.5 smmap==5.0.3
  sniffio==1.3.1 textual==8.2.8 truststore==0.10.5 typing-inspection==0.4.5 watchdog==7.1.0
)
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl "${wheels[@]}"
ls .whl
