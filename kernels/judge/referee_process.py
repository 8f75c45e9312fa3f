"""One referee process group and its private work directory, from start to clean-up.

A referee is started on the contestant's boundary alone (`ContestantLaunch`): it starts the
contestant and loads torch before any candidate exists. `judge` then hands it the run (key,
source, specs) and collects the signed report. Started ahead of its run, it is a warm referee;
either way it judges exactly one candidate and is closed after it, so nothing of one candidate
can reach the next.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.environment import judged_environment
from qrsup.kernels.judge.processes import (
    become_subreaper,
    descendants,
    kill_child_tree,
    kill_processes,
    make_undumpable,
    marked_children,
)
from qrsup.kernels.judge.protocol import (
    ChannelClosed,
    ChannelTimeout,
    LineReader,
    ProtocolError,
    verify,
)
from qrsup.kernels.schema import Progress, ProgressUpdate

RUN_MARK = "QRSUP_JUDGE_RUN"  # an environment variable naming the judge run a process belongs to


class RefereeProcess:
    """A referee started on `launch` in a fresh private work directory, waiting for its run."""

    def __init__(self, launch: ContestantLaunch) -> None:
        become_subreaper()
        make_undumpable()  # the key and the report pipe live here: out of reach of our own uid too
        self.work_dir = Path(tempfile.mkdtemp(prefix="qrsup-judge-"))
        os.chmod(self.work_dir, 0o700)
        self.launch = replace(launch, work_dir=self.work_dir)
        self.started = self.handed_over = time.monotonic()
        self._run_mark = secrets.token_hex(8)  # inherited by its descendants, escapees included
        self._report, report_write = os.pipe()
        self._log = open(self.work_dir / "referee.log", "wb")  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qrsup.kernels.judge.referee_main",
                str(report_write),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            pass_fds=(report_write,),
            start_new_session=True,
            env={**judged_environment(os.environ, launch.device), RUN_MARK: self._run_mark},
        )
        os.close(report_write)
        self._ended = self._closed = False
        with contextlib.suppress(OSError):  # one that died at once fails its run, said there
            self._send(self.launch.to_dict())

    @property
    def pid(self) -> int:
        return self._proc.pid

    def ready_for(self, launch: ContestantLaunch) -> bool:
        """Still waiting for its run, on a boundary that serves `launch`."""
        return not self._closed and self._proc.poll() is None and self.launch.serves(launch)

    def judge(
        self, run: dict, key: bytes, timeout_s: float, on_progress: Progress | None = None
    ) -> dict:
        """Hand over the run and wait for the report; a death, an overrun or a forged frame
        becomes a verdict. `phases_s["wall"]` counts from the handover."""
        started = self.handed_over = time.monotonic()
        try:
            self._send({**run, "key": key.hex()})
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        except OSError:  # BrokenPipeError included
            result: dict | str | None = None  # it died while it waited: said below
        else:
            result = _collect(LineReader(self._report), key, started + timeout_s, on_progress)
        self._end()
        if result is None:
            log = read_output(self.work_dir / "referee.log")
            reason = f"the judge process died (status {self._proc.returncode}) before reporting"
            return judge_failure("crash", reason, log)
        if isinstance(result, str):
            return judge_failure(*result.split(":", 1), "")
        result.setdefault("phases_s", {})["wall"] = time.monotonic() - started
        return result

    def close(self) -> None:
        """End the process group and anything that escaped it; remove the work directory."""
        if not self._closed:
            self._end()
            os.close(self._report)
            self._log.close()
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self._closed = True

    def _send(self, message: dict) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write((json.dumps(message) + "\n").encode())
        self._proc.stdin.flush()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        kill_child_tree(self._proc)
        self._proc.wait()
        escapees = marked_children(RUN_MARK, self._run_mark)
        kill_processes(escapees + [d for e in escapees for d in descendants(e.pid)])


def _collect(
    reader: LineReader, key: bytes, deadline: float, on_progress: Progress | None
) -> dict | str | None:
    """The referee's final report, a 'kind:reason' string for a broken run, or None if it died."""
    while True:
        try:
            line = reader.read_line(deadline)
        except ChannelTimeout:
            return "timeout:the judge run exceeded its total time limit; all processes killed"
        except ChannelClosed:
            return None
        except ProtocolError as exc:
            return f"fail:the judge channel was tampered with ({exc})"
        try:
            message = verify(key, line)
        except ProtocolError as exc:
            return f"fail:the judge channel was tampered with ({exc})"
        if message.get("type") == "report":
            return message
        if on_progress is not None:
            on_progress(ProgressUpdate.from_frame(message))


def judge_failure(verdict: str, reason: str, log: str) -> dict:
    detail = f"{reason}\n{log}".strip() if log else reason
    return {"verdict": verdict, "reason": detail, "specs": []}


OUTPUT_HEAD_BYTES = 4000
OUTPUT_TAIL_BYTES = 12000


def read_output(path: Path) -> str:
    """A process's own stdout/stderr, head and tail, for the human. Only those bytes are read:
    a candidate may fill its output file to the size limit (1 GiB), which read whole once
    took the supervisor's process to 2.8 GB."""
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size <= OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES:
                return file.read().decode("utf-8", errors="replace")
            head = file.read(OUTPUT_HEAD_BYTES).decode("utf-8", errors="replace")
            file.seek(size - OUTPUT_TAIL_BYTES)
            tail = file.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    skipped = size - OUTPUT_HEAD_BYTES - OUTPUT_TAIL_BYTES
    return f"{head}\n[… {skipped} bytes omitted …]\n{tail}"
