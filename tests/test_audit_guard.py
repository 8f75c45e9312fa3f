"""The contestant's audit guard (kernels/judge/audit_guard.py), in a process of its own: a hook
added to a process stays for its life, so it is never installed in the test runner's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import sys
    from qrsup.kernels.judge import audit_guard

    audit_guard.install()
    audit_guard.install()  # once a process
    print("filelock first", "filelock" in sys.modules)  # its own hook went in before the guard
    ran = []
    sys.addaudithook(lambda event, args: ran.append(event))  # refused, silently
    open(__file__).close()  # an audited event the refused hook would have seen
    print("ran", len(ran))
    print("attempts", audit_guard.attempts())
    try:
        audit_guard._guard[0].__defaults__ = ([], [None])
    except RuntimeError as error:
        print("change refused:", error)
    print("attempts", audit_guard.attempts())
    """
)


def test_a_hook_added_after_the_guard_never_runs_and_is_counted_as_is_a_change_to_it(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "filelock first True",
        "ran 0",
        "attempts 1",
        "change refused: the judge's audit guard cannot be changed",
        "attempts 2",
    ]
