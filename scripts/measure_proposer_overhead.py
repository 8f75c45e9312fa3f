"""Per-iteration overhead of the openai proposer against the loopback test server, and prompt size.

Run from the repository root: `python -m scripts.measure_proposer_overhead [--iterations N]`.
For each parent and memory length it times prompt build, request (real HTTP through the openai
client to `tests/fake_openai_server.py`, which answers at once) and apply, then the whole
`propose` call, and prints the estimated prompt size. Model latency is not included: that is
the model's, not the proposer's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from qrsup.agents.proposal import OutcomeSummary, ParentCandidate, ProposalContext
from qrsup.agents.proposers.chat import ChatClient, ModelConfig
from qrsup.agents.proposers.edits import apply_answer
from qrsup.agents.proposers.openai_proposer import OpenAIProposer
from qrsup.kernels.judge.outcome import cpu_model
from qrsup.kernels.suites import get_suite

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "QRSUP_MEASURE_KEY"
SPECS = 12


def parents() -> dict[str, str]:
    """The shipped small candidate, and the fast kernel's modules as one contest-style file."""
    fast = "\n\n".join(
        path.read_text() for path in sorted((ROOT / "kernels" / "fast").glob("*.py"))
    )
    fast += "\n\ndef custom_kernel(a):\n    return geqrf(a)\n"
    return {
        "blocked_wy.py (11 lines)": (ROOT / "kernels/candidates/blocked_wy.py").read_text(),
        f"fast kernel as one file ({fast.count(chr(10))} lines)": fast,
    }


def memory(iterations: int) -> tuple[OutcomeSummary, ...]:
    """A realistic history: hypotheses of ~110 chars, reasons of ~150, 12 figures per pass."""
    outcomes = []
    for i in range(1, iterations + 1):
        passed = i % 3 == 0
        outcomes.append(
            OutcomeSummary(
                iteration=i,
                candidate_id=f"c{i:07x}",
                hypothesis=(
                    f"variant {i}: panel width {16 + i % 7 * 16}, 3xTF32 trailing update on "
                    "n>=1024, graph replay for the small shapes"
                ),
                verdict="pass" if passed else "fail",
                geomean_ns=4.2e6 - i * 5e3 if passed else None,
                reason=""
                if passed
                else (
                    "factor residual 27.31 of 20 allowed on spec 9 (640x512 rowscale c0), worst "
                    f"matrix {i % 640}; orthogonality 3.1 of 100"
                ),
                spec_means_ns={k: 1e4 * (k + 1) * (1 + i / 1e3) for k in range(SPECS)}
                if passed
                else {},
            )
        )
    return tuple(outcomes)


def context(source: str, iterations: int, work_dir: Path) -> ProposalContext:
    parent = ParentCandidate(
        candidate_id="c0ffee0",
        source=source,
        hypothesis="shipped kernel",
        family="blocked-wy",
        geomean_ns=4.17e6,
        spec_means_ns={k: 1e4 * (k + 1) for k in range(SPECS)},
    )
    return ProposalContext(
        agent="ada",
        role="exploit",
        goal="beat 4.0 ms geomean on qr_v2",
        iteration=iterations + 1,
        parent=parent,
        incumbent=parent,
        memory=memory(iterations),
        steering=("keep the 640x512 path in fp32",),
        advisor_ideas=("[playbook:cuda-graphs] capture the launch sequence per shape",),
        profile_summary="panel 2814 us, update 5203 us, T join 625 us at 640x512",
        spec_labels=tuple(spec.label for spec in get_suite("qr_v2").benchmarks),
        work_dir=work_dir,
    )


def edit_answer(source: str) -> str:
    line = next(line for line in source.splitlines() if line.strip())
    return (
        "HYPOTHESIS: measurement edit\nFAMILY: blocked-wy\n\n"
        f"<<<<<<< SEARCH\n{line}\n=======\n{line}  # edited\n>>>>>>> REPLACE\n"
    )


def timed_ms(action: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1e3)
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(times):7.2f} / {p90:7.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50, help="timed repeats per row")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-measure-not-a-real-key-0000"
    print(f"date {time.strftime('%Y-%m-%d %H:%M')} · {platform.node()} · {cpu_model()}")
    print(f"python {platform.python_version()} · {os.cpu_count()} CPUs · {args.iterations} reps")
    print("times in ms, median / p90")
    header = f"{'parent':38} {'memory':>6} {'tokens':>7} {'build':>17} {'request':>17} "
    print(header + f"{'apply':>17} {'propose':>17}")
    with tempfile.TemporaryDirectory() as work, FakeOpenAIServer() as server:
        config = ModelConfig(model="measure", base_url=server.base_url, api_key_env=KEY_ENV)
        proposer, client = OpenAIProposer(config), ChatClient(config)
        for name, source in parents().items():
            answer = edit_answer(source)
            server_reply = ScriptedReply(answer)
            for iterations in (0, 20, 200, 1000):
                ctx = context(source, iterations, Path(work))
                request = proposer.request_for(ctx)
                build = timed_ms(lambda ctx=ctx: proposer.request_for(ctx), args.iterations)
                server.push(*[server_reply] * (2 * args.iterations + 1))
                client.complete(request.messages)  # warm the connection
                send = timed_ms(lambda r=request: client.complete(r.messages), args.iterations)
                apply = timed_ms(
                    lambda a=answer, s=source: apply_answer(a, s, "x"), args.iterations
                )
                whole = timed_ms(lambda ctx=ctx: proposer.propose(ctx), args.iterations)
                print(
                    f"{name:38} {iterations:>6} {request.estimated_tokens:>7} {summary(build)} "
                    f"{summary(send)} {summary(apply)} {summary(whole)}"
                )
        proposer.close()
        client.close()


if __name__ == "__main__":
    main()
