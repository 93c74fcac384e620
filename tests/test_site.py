"""The documentation site builds with ``mkdocs build --strict`` (issue 15): every page of the
nav exists, every link between pages and to the repository files the hook publishes resolves,
and every docstring the API reference renders parses as numpydoc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "reference" / "placement" / "index.html").is_file()
    api = tmp_path / "service-api" / "index.html"  # the OpenAPI document, rendered
    assert api.is_file() and "/v1/solve" in api.read_text(encoding="utf-8")
    assert json.loads((tmp_path / "openapi.json").read_text())["paths"]["/v1/solve"]
    report = tmp_path / "repo" / "benchmarks" / "placement" / "report" / "report" / "index.html"
    assert report.is_file()  # a committed report, published by docs_hooks.py
