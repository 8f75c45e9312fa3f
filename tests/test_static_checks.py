"""Candidate files are refused before any process starts when they cannot be judged."""

from __future__ import annotations

from qrsup.kernels.judge.static_checks import check_candidate_file


def test_missing_file(tmp_path):
    check = check_candidate_file(tmp_path / "nope.py", ("stream",))
    assert not check.ok and "not found" in check.reason


def test_not_python(tmp_path):
    path = tmp_path / "notes.py"
    path.write_text("this is not python at all\n")
    check = check_candidate_file(path, ())
    assert not check.ok and "is not Python" in check.reason


def test_binary_file_is_not_python(tmp_path):
    path = tmp_path / "blob.py"
    path.write_bytes(b"\xff\xfe\x00binary")
    assert "not UTF-8" in check_candidate_file(path, ()).reason


def test_no_custom_kernel(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("def other(a):\n    return a\n")
    check = check_candidate_file(path, ())
    assert not check.ok and "does not define custom_kernel" in check.reason


def test_custom_kernel_by_import_or_assignment_counts(tmp_path):
    for source in ("from x import custom_kernel\n", "custom_kernel = print\n"):
        path = tmp_path / "c.py"
        path.write_text(source)
        assert check_candidate_file(path, ()).ok


def test_forbidden_word_any_case_with_line(tmp_path):
    path = tmp_path / "c.py"
    path.write_text("def custom_kernel(a):\n    # uses a side STREAM\n    return a\n")
    check = check_candidate_file(path, ("stream",))
    assert not check.ok and "line 2" in check.reason
    assert check_candidate_file(path, ()).ok


def test_source_nested_past_the_parsers_stack_is_refused_not_raised(tmp_path):
    """`ast.parse` raises RecursionError on an attribute chain this deep; the check must answer
    for it, since the agent's loop and `qrsup test` run it in their own process."""
    path = tmp_path / "deep.py"
    path.write_text("def custom_kernel(a):\n    return a\n_x = " + "a." * 300_000 + "b\n")
    check = check_candidate_file(path, ())
    assert not check.ok
    assert check.reason == f"{path} is not Python this judge can parse (RecursionError)"
