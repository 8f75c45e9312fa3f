"""The guidance file: re-read each iteration, carried by every prompt, its changes noticed."""

from __future__ import annotations

from qrsup.agents.guidance import Guidance
from qrsup.agents.proposers.prompt_builder import build_request

from tests.proposal_contexts import context


def test_each_read_returns_the_file_as_it_is_and_says_when_it_changed(tmp_path):
    path = tmp_path / "guidance.md"
    guidance = Guidance(path)
    assert guidance.read() == ("", False)  # no file: nothing, and nothing new
    path.write_text("Keep every kernel under 200 lines.\n")
    assert guidance.read() == ("Keep every kernel under 200 lines.", True)
    assert guidance.read() == ("Keep every kernel under 200 lines.", False)
    path.unlink()
    assert guidance.read() == ("", True)  # withdrawn: a change too


def test_every_prompt_carries_the_guidance_under_its_own_heading(tmp_path):
    text = "Prefer Triton over CUDA C++; no cuSOLVER."
    user = build_request(context(tmp_path, guidance=text), "task").messages[1]["content"]
    heading = "## Standing guidance for every agent"
    assert heading in user and text in user.split(heading)[1].split("##")[0]
    user = build_request(context(tmp_path), "task").messages[1]["content"]
    assert "(none)" in user.split(heading)[1].split("##")[0]
