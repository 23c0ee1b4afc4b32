"""The documentation site: the configuration reference is current, and the site builds."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "docs" / "gen_config_reference.py"


def test_configuration_reference_is_generated_from_the_models() -> None:
    render = runpy.run_path(str(GENERATOR))["render"]
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert render() == committed, "run: python docs/gen_config_reference.py (or make docs)"


def test_every_setting_is_in_the_reference() -> None:
    from ctxfs._policy._settings import ContextPolicy

    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in ContextPolicy.model_fields:
        assert f"| `{name}` |" in reference


def test_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    built = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("index.html")}
    for page in ("cli", "concepts", "configuration", "integrations", "getting-started"):
        assert f"{page}/index.html" in built
    assert not list(tmp_path.rglob("*.py")), "the generator script leaked into the site"
