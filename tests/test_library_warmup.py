"""The contestant warms Triton and cuBLAS before any candidate code runs in it."""

from __future__ import annotations

import json
import subprocess
import sys

import torch
from qrsup.kernels.judge.library_warmup import warm_libraries

# In a fresh interpreter, as a contestant starts: what warm_triton did, and whether a kernel's
# first launch would still compute Triton's key or import its code generator.
FRESH_WARMUP = """
import json, sys
from qrsup.kernels.judge.library_warmup import triton_key_function, warm_triton
before = "triton.compiler.code_generator" in sys.modules
warmed = warm_triton()
key = triton_key_function()
key()
print(json.dumps({"before": before, "warmed": warmed, "info": list(key.cache_info()),
                  "codegen": "triton.compiler.code_generator" in sys.modules}))
"""


def test_a_fresh_process_has_triton_key_and_code_generator_ready_after_the_warm_up() -> None:
    result = subprocess.run(
        [sys.executable, "-c", FRESH_WARMUP], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.splitlines()[-1])
    assert not seen["before"], "the code generator was imported before the warm-up"
    assert "triton_key" in seen["warmed"] and seen["codegen"], seen
    hits, misses, _, size = seen["info"]
    assert (hits, misses, size) == (1, 1, 1), "the key was not cached by the warm-up"


def test_nothing_is_warmed_for_a_cpu_contestant() -> None:
    """On the CPU the candidate's kernels run in Triton's interpreter, which compiles nothing."""
    assert warm_libraries(torch.device("cpu")) == []
