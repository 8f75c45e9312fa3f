"""The referee's profile flow: one benchmark spec through the gates, then under torch.profiler.

A profile is information, never a verdict. The verdict comes from the gates alone, checked here
on the referee's own inputs before anything is profiled, and a failing candidate is refused a
profile. A profiler that cannot start, a contestant that dies while profiled, or a trace that
cannot be read leaves that verdict as it was, with the reason beside it.
"""

from __future__ import annotations

import time
from pathlib import Path

from qrsup.kernels.judge.contestant_process import ContestantFailure
from qrsup.kernels.judge.outcome import SpecOutcome, assemble_report
from qrsup.kernels.judge.referee import Referee
from qrsup.kernels.profiling.ncu import NcuError, measure
from qrsup.kernels.profiling.timeline import summarize
from qrsup.kernels.profiling.trace import TraceError, load_trace
from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import inputs_per_repetition

MAX_PROFILED_CALLS = 4
# ncu runs the candidate in a process of its own, with the counters only a privileged user reads.
NCU_NEEDS_NO_BOUNDARY = (
    "Nsight Compute would run the candidate outside the judge's boundary, so it runs only with "
    'isolation = "off" in qrsup.toml\'s [judge] table (for code you trust)'
)


class ProfileReferee(Referee):
    """Loads the candidate, checks the spec against the gates, profiles a fresh repetition."""

    def run(self) -> dict:
        started = time.monotonic()
        request = self.config["profile"]
        spec = Spec(**self.config["benchmarks"][0])
        gated = SpecOutcome(int(request["index"]), "test", spec)
        load_error, profile, problem = "", None, ""
        try:
            self._ask({"op": "hello"}, "load", "start")
            load_error = str(self._phase("load", self._load))
        except ContestantFailure as failure:
            load_error = f"the contestant failed to start: {failure.reason}"
        if load_error:
            gated.fail("error", load_error)
        else:
            self._run_outcome(gated, total=1)
        count = min(MAX_PROFILED_CALLS, inputs_per_repetition(spec, self.rule))
        if gated.status == "pass":
            profile, problem = self._phase("profile", lambda: self._profile(spec, count))
        self.contestant.close()  # before ncu, which runs the candidate in a process of its own
        if profile is not None and request.get("ncu"):
            profile.update(self._phase("ncu", lambda: self._counters(spec, count)))
        self.phases["total"] = time.monotonic() - started
        extra = {"profile": profile, "profile_error": problem, "phases_s": self.phases}
        return assemble_report([gated], load_error, self.device, extra)

    def _profile(self, spec: Spec, count: int) -> tuple[dict | None, str]:
        """(summary, "") from a profiled repetition on fresh inputs, or (None, why not)."""
        prepare = {"op": "prepare", "spec": _shape(spec), "seeds": self._fresh_seeds(count)}
        trace = self.contestant.trace_path
        try:
            reply = self._ask(prepare, "prepare", "prepare").reply
            if reply.get("ok"):
                reply = self._ask({"op": "profile"}, "first_call", "profile").reply
        except ContestantFailure as failure:
            return None, f"the contestant failed while profiled: {failure.reason}"
        if not reply.get("ok"):
            return None, _refusal(reply)
        clock = "device" if self.device.type == "cuda" else "cpu"
        try:
            figures = summarize(load_trace(trace), clock)
        except TraceError as exc:
            return None, f"the trace cannot be read: {exc}"
        return {"figures": figures.to_dict(), "ncu": [], "ncu_note": ""}, ""

    def _counters(self, spec: Spec, count: int) -> dict:
        """Nsight Compute's counters for the top kernels, or a note saying why there are none."""
        if self.device.type != "cuda":
            return {"ncu_note": "Nsight Compute needs a CUDA device; not measured on the CPU"}
        if self.config["isolation"]["mode"] != "off":
            return {"ncu_note": NCU_NEEDS_NO_BOUNDARY}
        target = {
            "candidate": self.config["candidate"],
            "device": str(self.device),
            "spec": _shape(spec),
            "seeds": self._fresh_seeds(count),
        }
        try:
            counters = measure(target, Path(self.config["work_dir"]))
        except NcuError as exc:
            return {"ncu_note": f"Nsight Compute: {exc}"}
        return {"ncu": [c.to_dict() for c in counters]}


def _shape(spec: Spec) -> dict:
    return {"batch": spec.batch, "n": spec.n, "cond": spec.cond, "case": spec.case}


def _refusal(reply: dict) -> str:
    """One line for a failed `profile` or `prepare` command: the traceback's last line."""
    lines = str(reply.get("error", "")).strip().splitlines()
    last = lines[-1] if lines else "no reason given"
    if reply.get("kind") == "profiler":
        return f"the profiler could not start: {last}"
    return f"profiling failed: {last}"
