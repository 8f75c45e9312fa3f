"""The TUI's figures for docs/benchmarks.md: its cost under a log flood, key latency, start-up.

Run from the repository root, with tmux installed:

    PYTHONPATH=$PWD python scripts/measure_tui.py load [--agents 8] [--rate 100] [--seconds 300]
    PYTHONPATH=$PWD python scripts/measure_tui.py startup

`load` fakes a session of N agents whose processes (simulated writers, one per agent, recognised
by the fleet as the agent) each append RATE lines per second to their `agent.log`, beat every two
seconds and record a candidate every 15 s. The real app runs in tmux at 100x30; this process
samples the app's CPU and RSS every 5 s and, every 5 s, presses a number key and times how long
until capture-pane shows that agent's log title (key press to screen, through a real terminal).
It also samples the whole host's CPU and load average: other work on the machine moves latencies.

`startup` runs `qrsup --init` in an empty workspace (the default session) and times the first
frame, the first agent evaluating (the incumbent's bootstrap) and the first candidate judged.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from qrsup.agents.heartbeat import Beat, read_beat, write_beat
from qrsup.agents.records import AgentLog, append_event
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict

ROOT = Path(__file__).resolve().parents[1]
AGENT_MARK = "qrsup.agents.agent_main"  # in a writer's argv, so the fleet takes it for the agent


class Terminal:
    """A detached tmux session of a fixed size, read by capture-pane."""

    def __init__(self, command: str, width: int = 100, height: int = 30) -> None:
        self.name = f"qrsup-measure-{os.getpid()}"
        size = ["-x", str(width), "-y", str(height)]
        self._tmux("new-session", "-d", "-s", self.name, *size, command)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, timeout_s: float) -> float:
        """Seconds until `text` is on screen, read every 5 ms (each read is a tmux client)."""
        start = time.perf_counter()
        while text not in self.screen():
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError(f"{text!r} not on screen after {timeout_s} s")
            time.sleep(0.005)
        return time.perf_counter() - start

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def writer(run_dir: Path, name: str, rate: float) -> None:
    """One simulated agent: RATE log lines a second, a beat every 2 s, a candidate every 15 s."""
    paths = RunPaths(run_dir)
    log, store = AgentLog(paths.agent_log(name)), Store(paths.store)
    started, line, candidates = time.monotonic(), 0, 0
    while True:
        line += 1
        log.write(f"it {line // 1500}: judging c-{name}{line:08d}: quick {line % 7}/7 · spec 3")
        if line % int(2 * rate) == 0:
            beat = Beat(os.getpid(), "evaluating", line // 1500, time.time(), detail="quick")
            write_beat(paths.heartbeat(name), beat)
        if line % int(15 * rate) == 0:
            candidates += 1
            record_candidate(paths, store, name, candidates)
        time.sleep(max(0.0, started + line / rate - time.monotonic()))


def record_candidate(paths: RunPaths, store: Store, agent: str, number: int) -> None:
    cid = f"c-{agent}-{number:04d}"
    geomean = 40e6 * (1 + 0.2 * ((number * 7919) % 11) / 11)
    source = f"PANEL = {number}\n"
    row = Candidate(cid, cid, source, None, agent, "exploit", "blocked_wy", "panel", None,
                       time.time())  # fmt: skip
    store.add_candidate(row)
    means = dict.fromkeys(range(7), geomean)
    store.add_evaluation(cid, agent, number, "full", {"verdict": "pass", "geomean_ns": geomean,
                                                     "reason": ""}, means)  # fmt: skip
    record = Iteration(agent, number, Verdict.PASS, Decision.BEAM_EXPLOIT, cid, geomean_ns=geomean)
    store.record_iteration(record)
    append_event(paths.events(agent), {"event": "iteration", "agent": agent, "iteration": number})


def fake_session(workspace: Path, agents: int) -> RunPaths:
    specs = tuple(AgentSpec(f"a{i}") for i in range(1, agents + 1))
    paths = RunPaths.of(workspace, "load")
    save_session(paths, SessionConfig("load", workspace, suite="smoke", agents=specs))
    for spec in specs:
        paths.ensure(spec.name)
    return paths


def run_app(run_dir: Path) -> None:
    """The app alone: the writers play the agents, so nothing is started."""
    from qrsup.supervisor.app import SupervisorApp
    from qrsup.supervisor.fleet import Fleet

    SupervisorApp(Fleet(RunPaths(run_dir))).run()


def load(agents: int, rate: float, seconds: float) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix="qrsup-tui-load-"))
    paths = fake_session(workspace, agents)
    python = sys.executable
    writers = [
        subprocess.Popen(
            [python, __file__, "writer", str(paths.root), spec.name, str(rate), AGENT_MARK],
            cwd=ROOT,
            env=_env(),
        )
        for spec in load_session(paths).agents
    ]
    for process, spec in zip(writers, load_session(paths).agents, strict=True):
        paths.pid_file(spec.name).write_text(str(process.pid))
    app_command = (
        f"{shlex.quote(python)} {shlex.quote(__file__)} app {shlex.quote(str(paths.root))}"
    )
    terminal = Terminal(
        f"env TERM=xterm-256color PYTHONPATH={shlex.quote(str(ROOT))} {app_command}"
    )
    try:
        terminal.wait_for("agents · session load", 60)
        app = _app_process(paths.root)
        app.cpu_percent(None)
        psutil.cpu_percent(None)
        writer_cpu_s = -sum(_cpu_s(process.pid) for process in writers)
        samples, latencies_s = [], []
        host_pct: list[float] = []  # every process's CPU, in % of one core
        load_1m: list[float] = []
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            time.sleep(5)
            samples.append((time.monotonic() - start, app.cpu_percent(None), app.memory_info().rss))
            host_pct.append(psutil.cpu_percent(None) * (os.cpu_count() or 1))
            load_1m.append(os.getloadavg()[0])
            agent = f"a{(len(latencies_s) + 1) % agents + 1}"  # a1 is selected at first
            terminal.keys(agent.removeprefix("a"))
            latencies_s.append(terminal.wait_for(f"log · {agent} ", 10))
        elapsed_s = time.monotonic() - start
        writer_cpu_s += sum(_cpu_s(process.pid) for process in writers)
        lines = sum(paths.agent_log(f"a{i}").read_text().count("\n") for i in range(1, agents + 1))
    finally:
        terminal.close()
        for process in writers:
            process.kill()
    cpu = [c for _, c, _ in samples]
    rss = [r for _, _, r in samples]
    return {
        "agents": agents,
        "rate_lines_per_s_each": rate,
        "seconds": seconds,
        "log_lines_written": lines,
        "writers_cpu_pct_all": round(100 * writer_cpu_s / elapsed_s, 1),
        "app_cpu_pct_mean": round(statistics.fmean(cpu), 1),
        "app_cpu_pct_max_5s": round(max(cpu), 1),
        "app_rss_mib_first": round(rss[0] / 2**20, 1),
        "app_rss_mib_last": round(rss[-1] / 2**20, 1),
        "app_rss_mib_max": round(max(rss) / 2**20, 1),
        "key_to_screen_ms_median": round(1000 * statistics.median(latencies_s), 1),
        "key_to_screen_ms_p95": round(1000 * _quantile(latencies_s, 0.95), 1),
        "key_to_screen_ms_max": round(1000 * max(latencies_s), 1),
        "key_presses": len(latencies_s),
        "host_cpu_pct_mean": round(statistics.fmean(host_pct), 1),
        "host_load_1m_mean": round(statistics.fmean(load_1m), 2),
        "samples": [(round(t), round(c, 1), round(r / 2**20, 1)) for t, c, r in samples],
    }


def startup() -> dict:
    workspace = Path(tempfile.mkdtemp(prefix="qrsup-tui-start-"))
    qrsup = f"{shlex.quote(sys.executable)} -m qrsup.supervisor.cli --workspace {workspace} --init"
    command = f"env TERM=xterm-256color PYTHONPATH={shlex.quote(str(ROOT))} {qrsup}"
    started = time.perf_counter()
    terminal = Terminal(command)
    paths = RunPaths.of(workspace, "default")
    try:
        first_frame_s = terminal.wait_for("agents · session default", 120)
        evaluating_s = _wait_beat(paths, started, lambda b: b.state == "evaluating")
        judging_s = _wait_beat(paths, started, lambda b: b.state == "evaluating" and b.candidate)
    finally:
        terminal.close()
        from qrsup.supervisor.fleet import Fleet

        fleet = Fleet(paths)
        for name in fleet.names():
            fleet.kill(name)
    return {
        "first_frame_s": round(first_frame_s, 2),
        "first_agent_evaluating_s": round(evaluating_s, 2),
        "first_candidate_judged_s": round(judging_s, 2),
        "agents": len(load_session(paths).agents),
        "suite": load_session(paths).suite,
    }


def _wait_beat(paths: RunPaths, started: float, condition, timeout_s: float = 900) -> float:
    while time.perf_counter() - started < timeout_s:
        names = [a.name for a in load_session(paths).agents] if paths.config.exists() else []
        if any((b := read_beat(paths.heartbeat(n))) and condition(b) for n in names):
            return time.perf_counter() - started
        time.sleep(0.05)
    raise TimeoutError("no agent reached the state")


def _app_process(run_dir: Path) -> psutil.Process:
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "app" in cmdline and str(run_dir) in cmdline:
            return process
    raise RuntimeError("the app process is not running")


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    flood = commands.add_parser("load")
    flood.add_argument("--agents", type=int, default=8)
    flood.add_argument("--rate", type=float, default=100.0)
    flood.add_argument("--seconds", type=float, default=300.0)
    commands.add_parser("startup")
    write = commands.add_parser("writer")
    write.add_argument("run_dir", type=Path)
    write.add_argument("name")
    write.add_argument("rate", type=float)
    write.add_argument("mark")
    app = commands.add_parser("app")
    app.add_argument("run_dir", type=Path)
    args = parser.parse_args()
    if args.command == "writer":
        writer(args.run_dir, args.name, args.rate)
        return
    if args.command == "app":
        run_app(args.run_dir)
        return
    figures = load(args.agents, args.rate, args.seconds) if args.command == "load" else startup()
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "date": time.ctime()}
    print(json.dumps({**machine, **figures}, indent=1))


if __name__ == "__main__":
    main()
