"""``ctxfs session show | resume`` on a local folder and on S3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._cli._main import main
from ctxfs.workflows._stage import NAME_PATTERN
from tests.conftest import s3_options

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "workflow_research.py"

FLOW = """
from ctxfs.workflows import Stage, Workflow

def build(workspace):
    def first(stage_input):
        return {"summary": "planned", "confidence": "high"}

    def second(stage_input):
        return '{"summary": "found it", "confidence": "sure"}'

    return Workflow(
        stages=[Stage(name="plan", prompt="Plan.", agent=first),
                Stage(name="find", prompt="Find.", agent=second)],
        workspace=workspace,
    )

not_a_function = 3
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(params=["local", "s3"])
def where(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Workspace]:
    """A workspace URL, and the same workspace opened in the test."""
    if request.param == "local":
        url = str(tmp_path / "ws")
        return url, Workspace(url)
    endpoint = request.getfixturevalue("s3_endpoint")
    bucket = request.getfixturevalue("s3_bucket")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CTXFS_S3_ENDPOINT_URL", endpoint)
    url = f"s3://{bucket}/flows"
    return url, Workspace(url, storage_options=s3_options(endpoint))


def _flow_file(tmp_path: Path) -> str:
    path = tmp_path / "flow.py"
    path.write_text(FLOW)
    return str(path)


def _load_build(path: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(Path(path).read_text(), path, "exec"), namespace)
    return namespace["build"]


def test_show_a_halted_workflow_fix_it_and_resume(
    where: tuple[str, Workspace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, workspace = where
    flow = _flow_file(tmp_path)
    assert run(capsys, "session", "show", url)[1] == f"no workflows in {workspace.url}\n"
    assert _load_build(flow)(workspace).run("Find the bug", workflow_id="bug").status == "halted"

    status, out, err = run(capsys, "session", "show", url)
    assert (status, err) == (0, "")
    assert out.startswith("bug  halted, at find  1/2 stages  updated ")
    status, out, _ = run(capsys, "session", "show", url, "bug")
    assert status == 0
    assert "task: Find the bug\nstate file: /sessions/bug.json\nstages:\n" in out
    assert "  1. plan  completed  confidence high    /sessions/bug/stages/01-plan.json\n" in out
    assert "  2. find  HALTED: invalid output (below)\n" in out
    assert (
        "halted at find: its output does not match the stage's schema:\n"
        "  confidence: Input should be 'high', 'medium' or 'low'\n"
        "raw output (fix it in the state file's halt.raw_output, then resume):\n"
        '  {\n    "summary": "found it",\n    "confidence": "sure"\n  }\n'
    ) in out
    status, out, _ = run(capsys, "session", "show", url, "bug", "--json")
    state = json.loads(out)
    assert status == 0 and state["halt"]["raw_output"]["confidence"] == "sure"

    # Resuming without a fix halts again (exit 1); after the fix it completes (exit 0).
    status, out, _ = run(capsys, "session", "resume", url, "bug", "--workflow", f"{flow}:build")
    assert status == 1 and "HALTED" in out
    state = json.loads(workspace.read_text("/sessions/bug.json"))
    state["halt"]["raw_output"]["confidence"] = "medium"
    workspace.write_text("/sessions/bug.json", json.dumps(state, indent=2))
    status, out, err = run(capsys, "session", "resume", url, "bug", "--workflow", f"{flow}:build")
    assert (status, err) == (0, "")
    assert "workflow bug: completed" in out
    assert "  2. find  completed  confidence medium  /sessions/bug/stages/02-find.json" in out


def test_resume_the_example_after_a_failed_stage(
    where: tuple[str, Workspace], capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    url, workspace = where
    spec = importlib.util.spec_from_file_location("example_workflow_research", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    flow = example.build_workflow(workspace)

    def down(stage_input: Any) -> Any:
        raise ConnectionError("the search API is down")

    object.__setattr__(flow.stages[1], "agent", down)
    with pytest.raises(ConnectionError):
        flow.run(example.TASK, workflow_id="queue")
    status, out, err = run(
        capsys, "session", "resume", url, "queue", "--workflow", f"{EXAMPLE}:build_workflow"
    )
    assert (status, err) == (0, "")
    assert "workflow queue: completed" in out
    assert "errors so far: 1\n  researcher: the agent raised ConnectionError: " in out
    assert workspace.exists("/research/queue/incident-2026-03.md")


def test_errors_are_one_line(
    where: tuple[str, Workspace], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, workspace = where
    flow = _flow_file(tmp_path)
    _load_build(flow)(workspace).run("t", workflow_id="w")
    cases = {
        ("show", url, "nope"): "ctxfs session: no workflow 'nope' in ",
        ("resume", url, "w", "--workflow", "missing.py:build"): (
            "ctxfs session: --workflow 'missing.py:build': no such file missing.py"
        ),
        ("resume", url, "w", "--workflow", f"{flow}:nothing"): "has no function 'nothing'",
        ("resume", url, "w", "--workflow", f"{flow}:not_a_function"): "no function",
        ("resume", url, "w", "--workflow", "flow.py"): "give FILE.py:NAME or module:NAME",
        ("resume", url, "w", "--workflow", "no_such_module_x:build"): "cannot import",
    }
    for argv, message in cases.items():
        status, out, err = run(capsys, "session", *argv)
        assert status == 2 and out == "" and message in err, (argv, err)
        assert err.count("\n") == 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# an id starting with '-' is an option to argparse (still exit 2, with argparse's own
# message), and one holding a NUL is refused before any parsing (exit 2, naming its
# position: test_cli_surface.py): the generated ids hold neither
@given(
    workflow_id=st.text(max_size=80).filter(
        lambda t: not NAME_PATTERN.fullmatch(t) and not t.startswith("-") and "\x00" not in t
    )
)
def test_a_workflow_id_that_cannot_name_a_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workflow_id: str
) -> None:
    """Regression: 'session resume WS ../x' was an internal error (exit 70) and 'session show
    WS /bug' read /sessions//bug.json; the id is checked as an argument, before any file."""
    url = str(tmp_path / "ids")
    Path(url).mkdir(exist_ok=True)
    flow = _flow_file(tmp_path)
    for argv in (
        ["session", "show", url, workflow_id],
        ["session", "resume", url, workflow_id, "--workflow", f"{flow}:build"],
    ):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert "error: argument WORKFLOW_ID: workflow_id " in err
        assert "must be 1 to 64 letters" in err


def test_a_folder_where_a_state_file_belongs_is_listed_as_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was left out of the listing, as if there were no such workflow; then it was listed
    with exit status 0, unlike ``memory show`` with a damaged file."""
    squatter = tmp_path / "ws" / "sessions" / "w.json"
    squatter.mkdir(parents=True)
    (squatter / "x").write_text("")
    url = str(tmp_path / "ws")
    status, out, _ = run(capsys, "session", "show", url)
    assert (status, out) == (2, "w  unreadable: /sessions/w.json is a folder, not a state file\n")
    status, out, err = run(capsys, "session", "show", url, "w")
    assert status == 2 and err == "ctxfs session: /sessions/w.json is a folder, not a state file\n"


def test_the_workflows_own_code_failing_is_one_line_naming_it_not_a_defect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a syntax error, an exception at import or in the build function came out as
    # "internal error (...); please report it", exit status 70
    url = str(tmp_path / "ws")
    _load_build(_flow_file(tmp_path))(Workspace(url)).run("t", workflow_id="w")
    sources = {
        "syntax.py": ("def build(:\n", "loading {path} raised SyntaxError: "),
        "boom.py": ("raise RuntimeError('no config')\n", "raised RuntimeError: no config"),
        "build.py": (
            "def build(workspace):\n    raise KeyError('stages')\n",
            "it raised KeyError: 'stages'",
        ),
        "arity.py": ("def build(a, b):\n    pass\n", "it raised TypeError: build() missing"),
        "exits.py": ("import sys\nsys.exit(3)\n", "called sys.exit(3); the file must define"),
    }
    before = sorted(p.name for p in (tmp_path / "ws").rglob("*"))
    for name, (code, message) in sources.items():
        path = tmp_path / name
        path.write_text(code)
        status, out, err = run(capsys, "session", "resume", url, "w", "--workflow", f"{path}:build")
        assert status == 2 and out == "", err
        assert err.startswith(f"ctxfs session: --workflow '{path}:build': "), err
        assert message.format(path=path) in err and err.count("\n") == 1, err
    assert sorted(p.name for p in (tmp_path / "ws").rglob("*")) == before


def test_a_stage_agent_that_raises_stops_the_resume_with_its_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "ws")
    workspace = Workspace(url)
    _load_build(_flow_file(tmp_path))(workspace).run("t", workflow_id="w")  # halts at find
    flow = tmp_path / "raising.py"
    flow.write_text(
        FLOW.replace(
            'return \'{"summary": "found it", "confidence": "sure"}\'',
            "raise ConnectionError('the search API is down')",
        )
    )
    status, out, err = run(
        capsys, "session", "resume", url, "w", "--workflow", f"{flow}:build", "--retry"
    )
    assert status == 1
    assert err == (
        "ctxfs session: stage 'find' stopped the workflow: the agent raised ConnectionError: "
        "the search API is down (recorded in /sessions/w.json; resume it to run the stage "
        "again)\n"
    )
    assert "workflow w: interrupted" in out
    assert out.endswith(
        "  find: the agent raised ConnectionError: the search API is down\n"
        "memory snapshots:\n  plan: planned\n"
    )
    status, out, err = run(capsys, "session", "show", url, "w")
    assert status == 0 and "find: the agent raised ConnectionError" in out
