"""The contestant process: the only process where candidate code runs.

Nothing this process says is taken on trust. The referee regenerates every checked input itself
and checks exported outputs in its own process; it brackets every timed window with its own clock,
so a patched timer, work moved to a side stream, or work deferred past the window shows up as
time the events did not account for. The checks made here (aliasing, input mutation, output
structure) give clear messages to honest candidates; defeating them gains a cheater nothing.
The `profile` command's trace is information for people and agents, never part of a verdict.

Run through `qrsup.kernels.judge.sandbox_main` as
`python -m qrsup.kernels.judge.contestant CMD_FD REPLY_FD DEVICE EXPORT_FD TRACE_FD SOURCE_FD`.
It starts with torch loaded and no candidate; `load` reads the one candidate it will ever run
from SOURCE_FD, which the referee fills.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from qrsup.kernels import generators, suites
from qrsup.kernels.generators import generate_input
from qrsup.kernels.judge import audit_guard, candidate_threads, export_area, protocol
from qrsup.kernels.judge.candidate_threads import ThreadSpan
from qrsup.kernels.judge.export_area import ExportArea
from qrsup.kernels.judge.harness_watch import HarnessWatch
from qrsup.kernels.judge.library_warmup import warm_libraries
from qrsup.kernels.judge.processes import schedstat
from qrsup.kernels.judge.protocol import LineReader, decode, encode, write_all
from qrsup.kernels.profiling.trace import CALL_RANGE
from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import L2_FLUSH_BYTES

# Captured before any candidate code is imported, so rebinding these names later changes nothing
# here; deeper patches are caught by the referee's own clock.
_perf_counter_ns = time.perf_counter_ns
_cuda_synchronize = torch.cuda.synchronize
_CudaEvent = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed_ms = torch.cuda.Event.elapsed_time
_tensor_clone = torch.Tensor.clone
_tensor_equal = torch.equal
_profiler = torch.autograd.profiler.profile
_record_function = torch.profiler.record_function
_schedstat = schedstat
_collector_off, _collect = gc.disable, gc.collect

MAX_TRACEBACK_CHARS = 8000
# The contestant's attributes that change as it serves: the candidate, and each repetition's
# inputs and outputs. Any other is the harness's own and must not change once it is built.
PER_REPETITION = ("kernel", "originals", "inputs", "outputs")
# The operators the harness runs around the candidate's window: its input generation (every
# case), the clone each call gets, the flush, the mutation check and the export. A kernel
# registered for one of them runs the candidate's code outside every window, so each look
# before outputs are inspected checks where the dispatcher sends them (harness_watch.py).
HARNESS_OPERATORS = (
    "aten::abs", "aten::add.Tensor", "aten::arange", "aten::clone", "aten::copy_",
    "aten::detach", "aten::diag_embed", "aten::empty.memory_format", "aten::empty_like",
    "aten::equal", "aten::expand", "aten::fill_.Tensor", "aten::index.Tensor",
    "aten::index_put_", "aten::le.Scalar", "aten::lift_fresh", "aten::linspace",
    "aten::logspace", "aten::mul.Tensor", "aten::multinomial", "aten::ones",
    "aten::randn.generator", "aten::randperm.generator", "aten::reshape", "aten::slice.Tensor",
    "aten::sub.Tensor", "aten::triu", "aten::unsqueeze", "aten::view", "aten::zero_",
)  # fmt: skip

Kernel = Callable[[torch.Tensor], object]


# How the harness reads a pair: a type that defines any of these runs code as it is read.
READING = ("__iter__", "__len__", "__getitem__")


def is_plain_pair(value: object) -> bool:
    """A tuple or a list, or a tuple type that reads as one: torch's result tuples
    (`torch.geqrf`'s), a named tuple. Decided from the type alone, before anything reads the
    value: a subclass whose iteration factored the input when the export read it passed two
    smoke specs. A metaclass could make the class's attributes lie, so none is allowed."""
    kind = type(value)
    if kind in (tuple, list):
        return True
    if type(kind) is not type or not issubclass(kind, tuple):
        return False
    own = kind.__mro__[: kind.__mro__.index(tuple)]
    return not any(name in vars(cls) for cls in own for name in READING)


class DeviceClock:
    """Times a window on the device: CUDA events, or a monotonic clock after synchronising."""

    def __init__(self, device: torch.device) -> None:
        self._cuda = device.type == "cuda"

    def synchronize(self) -> None:
        if self._cuda:
            _cuda_synchronize()

    def time_ns(self, body: Callable[[], None]) -> tuple[int, int]:
        """The window's claimed time, and how long this thread waited for a CPU while `body`
        ran (schedstat): on a loaded host that wait overlaps the device's work or lengthens
        the claimed time, so the referee excuses only the rest of the window's wait."""
        self.synchronize()
        waited_before = _schedstat()[1]
        if not self._cuda:
            start = _perf_counter_ns()
            body()
            return _perf_counter_ns() - start, _schedstat()[1] - waited_before
        start_event = _CudaEvent(enable_timing=True)
        end_event = _CudaEvent(enable_timing=True)
        _event_record(start_event)
        body()
        _event_record(end_event)
        launch_wait = _schedstat()[1] - waited_before
        _cuda_synchronize()
        return int(_event_elapsed_ms(start_event, end_event) * 1e6), launch_wait


def _calibration_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Does next to no work but returns well-formed outputs: timing it measures the harness."""
    return _tensor_clone(a), _tensor_clone(a[:, 0])


class Contestant:
    """Holds one repetition's inputs and outputs and answers the referee's commands."""

    def __init__(
        self, device: torch.device, export_fd: int = -1, trace_fd: int = -1, source_fd: int = -1
    ) -> None:
        self.device = device
        self.trace_fd, self.source_fd = trace_fd, source_fd
        self.exports = ExportArea(export_fd) if export_fd >= 0 else None
        if self.exports is not None and device.type == "cuda":
            self.exports.pin()  # before any candidate code, while the contestant waits for it
        self.clock = DeviceClock(device)
        self.threads = ThreadSpan()
        self.kernel: Kernel | None = None
        self.originals: list[torch.Tensor] = []
        self.inputs: list[torch.Tensor] = []
        self.outputs: list[object] = []
        self._flush = (
            torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device)
            if device.type == "cuda"
            else None
        )
        self.warmed = warm_libraries(device)  # before any candidate code: the same for each
        audit_guard.install()  # before the watch looks first: no audit hook of the candidate's
        # Before any candidate code exists here: the tools that prepare, time and hand back
        # its work, as they are, this object's among them (the watch included).
        modules = [sys.modules[__name__], generators, suites, export_area, protocol]
        modules += [candidate_threads, audit_guard]
        self.watch = HarnessWatch(modules, HARNESS_OPERATORS, device.type)
        harness = {"contestant": (self, PER_REPETITION), "clock": (self.clock, ())}
        harness["thread span"] = (self.threads, ("_start",))
        if self.exports is not None:
            harness["export area"] = (self.exports, ())
        self.watch.add_objects(harness)

    def hello(self, _: dict) -> dict:
        return {"ok": True, "pid": os.getpid(), "device": str(self.device), "warmed": self.warmed}

    def load(self, message: dict) -> dict:
        """Copy the candidate's source from SOURCE_FD to where the referee says, then import it."""
        path = Path(message["path"])
        path.write_bytes(os.pread(self.source_fd, int(message["size"]), 0))
        return self.import_candidate(path)

    def import_candidate(self, path: Path) -> dict:
        spec = importlib.util.spec_from_file_location("submission", path)
        if spec is None or spec.loader is None:
            return {"ok": False, "kind": "error", "error": f"cannot import {path}"}
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
        kernel = getattr(module, "custom_kernel", None)
        if not callable(kernel):
            return {"ok": False, "kind": "error", "error": "custom_kernel is not callable"}
        self.kernel = kernel
        return {"ok": True}

    def prepare(self, message: dict) -> dict:
        """Fresh inputs from the referee's seeds, one clone per call, L2 flushed, device idle;
        refused when the candidate has reached into the tools that make them. The candidate's
        threads are read from here to the timed window (candidate_threads.py)."""
        self.threads.start()
        self.originals, self.inputs, self.outputs = [], [], []
        shape = message["spec"]

        def make_inputs() -> None:
            # Spec's own constructor, not `reseeded`: that goes through `dataclasses.replace`,
            # a function outside the harness that a candidate could wrap to see each seed.
            self.originals = [
                generate_input(Spec(**shape, seed=seed), self.device) for seed in message["seeds"]
            ]
            self.inputs = [_tensor_clone(a) for a in self.originals]

        if tampered := self.watch.guard(make_inputs):
            return {"ok": False, "kind": "tamper", "error": tampered}
        if self._flush is not None:
            self._flush.zero_()
        self.clock.synchronize()
        return {"ok": True}

    def go(self, message: dict) -> dict:
        kernel = _calibration_kernel if message.get("calibrate") else self.kernel
        if kernel is None:
            return {"ok": False, "kind": "error", "error": "no candidate loaded"}
        outputs: list[object] = []

        def body() -> None:
            for a in self.inputs:
                outputs.append(kernel(a))

        threads_ns = self.threads.ran_ns()
        elapsed_ns, launch_wait_ns = self.clock.time_ns(body)
        self.threads.start()
        self.outputs = outputs
        return {
            "ok": True,
            "elapsed_ns": elapsed_ns,
            "launch_wait_ns": launch_wait_ns,
            "threads_ns": threads_ns,
        }

    def profile(self, message: dict) -> dict:
        """The prepared inputs once more, under the profiler; the raw trace goes to `trace`."""
        kernel = self.kernel
        if kernel is None:
            return {"ok": False, "kind": "error", "error": "no candidate loaded"}
        # torch.autograd's profiler, not torch.profiler's wrapper: same trace, but starting the
        # wrapper imports torch._inductor, seconds of CPU on a small host.
        device = "cuda" if self.device.type == "cuda" else None
        profiler = _profiler(use_device=device, profile_memory=True, use_kineto=True)
        running = contextlib.ExitStack()
        try:
            running.enter_context(profiler)
        except Exception:
            return {"ok": False, "kind": "profiler", "error": _traceback()}
        outputs: list[object] = []
        with running:
            for a in self.inputs:
                with _record_function(CALL_RANGE):
                    outputs.append(kernel(a))
            self.clock.synchronize()
        del outputs
        self.release()
        trace = Path(os.environ.get("TMPDIR", "/tmp")) / "profile-trace.json"
        profiler.export_chrome_trace(str(trace))
        _copy_into(trace, self.trace_fd)
        trace.unlink()
        return {"ok": True}

    def inspect(self, message: dict) -> dict:
        """Rule checks on the last outputs; with `export`, write them where the referee reads.
        Refused, like a preparation, when the candidate has reached into the harness: what
        it patched during its calls would otherwise only be seen at the next preparation."""
        if tampered := self.watch.seen(operators=True):
            return {"ok": False, "kind": "tamper", "error": tampered}
        problems = [p for i, out in enumerate(self.outputs) for p in self._problems(i, out)]
        problems += self._aliasing_problems()
        problems += self._mutation_problems()
        if message.get("export") and not problems:
            self._export()
        self.release()
        return {"ok": True, "problems": problems[:20], "threads_ns": self.threads.ran_ns()}

    def release(self) -> None:
        """Let this repetition's inputs and outputs go, and collect young reference cycles,
        while no new seed is in this process: the referee sends the next ones only after this
        reply. A finalizer on an output or an input runs as they go. When they went at the
        start of the next preparation, one read that preparation's seeds from its frame, made
        the same inputs with the harness's generator and factored them there. The collector is
        off everywhere else (`serve`); older cycles stay until the process ends."""
        self.originals, self.inputs, self.outputs = [], [], []
        _collect(1)

    def audit(self, _: dict) -> dict:
        """The watch's widest look, after a spec is timed and outside every timed cycle: a kernel
        registered for an operator the list leaves out, one a listed operator calls below
        Python (`aten::empty_strided` under the clone), is seen here."""
        if tampered := self.watch.seen(every_operator=True):
            return {"ok": False, "kind": "tamper", "error": tampered}
        return {"ok": True}

    def _problems(self, index: int, output: object) -> list[dict]:
        """Plain types are checked first, by `type()` alone: a subclass's hooks (a tuple's
        iteration, a tensor's `__torch_function__`) would run the candidate's code as the harness
        reads its outputs, after the window; one that factored as the export detached its
        outputs passed the smoke suite at a sixtieth of the real time on the CPU."""
        if not is_plain_pair(output) or len(output) != 2:
            kind = type(output).__name__
            reason = f"custom_kernel returned {kind}, not a plain (H, tau) tuple or list"
            return [_problem(index, "type", reason)]
        a = self.originals[index]
        batch, n = a.shape[0], a.shape[-1]
        found = []
        for name, value, shape in (("H", output[0], (batch, n, n)), ("tau", output[1], (batch, n))):
            if type(value) is not torch.Tensor:
                kind = type(value).__name__
                if isinstance(value, torch.Tensor):
                    kind = f"a torch.Tensor subclass ({kind})"
                found.append(_problem(index, "type", f"{name} is {kind}, not a plain tensor"))
            elif tuple(value.shape) != shape:
                reason = f"{name} has shape {tuple(value.shape)}, expected {shape}"
                found.append(_problem(index, "shape", reason))
            elif value.dtype != torch.float32:
                reason = f"{name} has dtype {value.dtype}, expected torch.float32"
                found.append(_problem(index, "dtype", reason))
            elif value.device != a.device:
                reason = f"{name} is on {value.device}, expected {a.device}"
                found.append(_problem(index, "device", reason))
        return found

    def _aliasing_problems(self) -> list[dict]:
        spans = [("input", i, _span(a)) for i, a in enumerate(self.inputs)]
        found = []
        for i, output in enumerate(self.outputs):
            if not is_plain_pair(output):
                continue
            for name, value in zip(("H", "tau"), output, strict=False):
                if type(value) is not torch.Tensor:
                    continue
                span = _span(value)
                for owner, j, other in spans:
                    if _overlaps(span, other):
                        what = f"input {j}" if owner == "input" else f"{owner} of call {j}"
                        reason = f"{name} of call {i} shares memory with {what}"
                        found.append(_problem(i, "alias", reason))
                        break
                spans.append((name, i, span))
        return found

    def _mutation_problems(self) -> list[dict]:
        found = []
        for i, (original, given) in enumerate(zip(self.originals, self.inputs, strict=True)):
            if not _tensor_equal(original, given):
                found.append(
                    _problem(i, "mutation", f"custom_kernel wrote to its input (call {i})")
                )
        return found

    def _export(self) -> None:
        """Raw float32 H then tau for each call, in order, into the memory the referee reads:
        on a GPU by DMA into its pinned pages (export_area.py)."""
        outputs: list[tuple[torch.Tensor, torch.Tensor]] = self.outputs  # type: ignore[assignment]
        values = [value.detach().reshape(-1) for output in outputs for value in output]
        if self.exports is None:
            raise RuntimeError("the contestant was started without an export area")
        target = self.exports.floats(sum(v.numel() for v in values))
        offset = 0
        for value in values:
            target[offset : offset + value.numel()].copy_(value, non_blocking=True)
            offset += value.numel()
        self.clock.synchronize()


def _copy_into(path: Path, fd: int) -> None:
    """Replace the contents of the file behind `fd` with `path`'s."""
    os.ftruncate(fd, 0)
    with open(path, "rb") as source, os.fdopen(os.dup(fd), "wb") as sink:
        sink.seek(0)
        while chunk := source.read(1 << 20):
            sink.write(chunk)


def _problem(index: int, gate: str, reason: str) -> dict:
    return {"index": index, "gate": gate, "reason": reason}


def _span(t: torch.Tensor) -> tuple[str, int, int]:
    """The bytes a tensor's elements actually occupy (views of one pool may sit side by side)."""
    start = t.data_ptr()
    if t.numel() == 0:
        return (str(t.device), start, start)
    extent = 1 + sum(
        (size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride(), strict=True)
    )
    return (str(t.device), start, start + extent * t.element_size())


def _overlaps(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2] and a[1] != a[2]


def serve(contestant: Contestant, cmd_fd: int, reply_fd: int) -> None:
    """Answer commands until told to exit or the referee goes away."""
    handlers = {
        "hello": contestant.hello,
        "load": contestant.load,
        "prepare": contestant.prepare,
        "go": contestant.go,
        "profile": contestant.profile,
        "inspect": contestant.inspect,
        "audit": contestant.audit,
    }
    reader = LineReader(cmd_fd)
    while True:
        # The cyclic collector runs a finalizer in a reference cycle wherever it runs, with no
        # hook the watch could see: one that re-armed itself at a threshold of 1 found each new
        # input from the preparing frame and factored it there. So it is off from each read to
        # the next (the candidate may turn it on inside its calls), and runs only in `release`.
        _collector_off()
        message = decode(reader.read_line())
        op = message.get("op")
        if op == "exit":
            return
        try:
            reply = handlers[op](message)
        except MemoryError:
            reply = {"ok": False, "kind": "memory", "error": _traceback()}
        except Exception:
            kind = "memory" if _looks_like_oom(sys.exc_info()[1]) else "error"
            reply = {"ok": False, "kind": kind, "error": _traceback()}
        reply["seq"] = message.get("seq")
        write_all(reply_fd, encode(reply))


def _looks_like_oom(exc: BaseException | None) -> bool:
    text = str(exc)
    return isinstance(exc, torch.OutOfMemoryError) or "can't allocate memory" in text


def _traceback() -> str:
    text = traceback.format_exc()
    return text[-MAX_TRACEBACK_CHARS:]


def main() -> None:
    cmd_fd, reply_fd, device, export_fd, trace_fd, source_fd = sys.argv[1:7]
    contestant = Contestant(torch.device(device), int(export_fd), int(trace_fd), int(source_fd))
    serve(contestant, int(cmd_fd), int(reply_fd))
    # No interpreter shutdown: the process is never reused and keeps nothing, and torch's,
    # CUDA's and Triton's teardown is time the referee would wait for. The candidate's output
    # is all it leaves, so that is flushed first.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
