"""The contestant's dedicated user is created once, however many judges start together."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from concurrent.futures import ProcessPoolExecutor

import pytest
from qrsup.kernels.judge.sandbox import dedicated_user

THROWAWAY = "qrsup-user-race"  # never the real judge user, which other tests rely on


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd"), reason="needs root")
def test_judges_starting_together_on_a_fresh_machine_get_the_same_new_user():
    subprocess.run(["userdel", THROWAWAY], capture_output=True, check=False)
    try:
        with ProcessPoolExecutor(max_workers=6) as pool:
            found = list(pool.map(dedicated_user, [THROWAWAY] * 6))
        entry = pwd.getpwnam(THROWAWAY)
        assert found == [(entry.pw_uid, entry.pw_gid)] * 6
        assert entry.pw_uid != 0
    finally:
        subprocess.run(["userdel", THROWAWAY], capture_output=True, check=False)
