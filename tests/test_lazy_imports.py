"""``topoopt solve`` reads its instance without importing what it does not need (issue #14):
the command line imports no MIP modelling layer and no benchmark stack, and loading an
instance imports its own family only. Checked on ``sys.modules`` in a fresh interpreter,
never with a clock."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTITION = ROOT / "instances" / "partition" / "small" / "small-0-0.json"


def _modules_after(code: str) -> set[str]:
    """The top-level names in ``sys.modules`` after running ``code`` in a new interpreter."""
    script = textwrap.dedent(code) + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_imports_no_pyomo_and_no_family() -> None:
    loaded = _modules_after("import topoopt.cli")
    assert "pyomo" not in loaded
    assert "topoopt.bench" not in loaded  # instances/bench/report are imported when used
    assert "topoopt.cli.solve" not in loaded  # every command is imported when used
    assert not {m for m in loaded if m.split(".")[:2] == ["topoopt", "placement"]}
    assert "networkx" not in loaded and "numpy" not in loaded


def test_solving_imports_no_web_stack() -> None:
    """``topoopt solve`` (the command and the API) never imports the HTTP service's stack."""
    loaded = _modules_after(
        f"""
        import topoopt, topoopt.cli, topoopt.cli.solve, topoopt.client
        topoopt.solve({str(PARTITION)!r}, "partition/greedy-lowcut")
        """
    )
    web = {"starlette", "uvicorn", "httpx", "anyio", "h11", "topoopt.serve"}
    assert not web & loaded


def test_loading_an_instance_imports_its_family_alone() -> None:
    loaded = _modules_after(
        f"""
        import topoopt, topoopt.cli
        topoopt.load({str(PARTITION)!r})
        """
    )
    assert "topoopt.partition" in loaded
    for other in ("placement", "gpuselect", "ocs", "clusterselect"):
        assert f"topoopt.{other}" not in loaded, other
    assert "pyomo" not in loaded and "networkx" not in loaded


def test_the_lazy_commands_are_listed() -> None:
    from click.testing import CliRunner

    from topoopt.cli import main

    out = CliRunner().invoke(main, ["--help"])
    assert out.exit_code == 0, out.output
    for command in ("bench", "instances", "report", "serve", "solve", "solvers"):
        assert command in out.output
