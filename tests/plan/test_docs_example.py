"""docs/plan.md's worked example is reproduced exactly: its ``job.json`` and ``mc.json`` blocks
are written, ``topoopt plan`` runs on them, and every block marked ``<!-- plan-example: NAME
-->`` equals what the plan writes (files) or prints (``summary``: ``Plan.summary(times=False)``;
``plan.json`` without its ``seconds``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from topoopt.cli import main
from topoopt.plan import make_plan

DOC = Path(__file__).resolve().parents[2] / "docs" / "plan.md"
MARKER = re.compile(r"^<!--\s*plan-example:\s*(\S+)\s*-->\s*$")


def marked_blocks() -> dict[str, str]:
    """``name -> text`` of every fenced block right after a ``plan-example`` marker."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        found = MARKER.match(line)
        if not found:
            continue
        assert lines[i + 1].startswith("```"), f"docs/plan.md:{i + 1}: marker not before a block"
        end = lines.index("```", i + 2)
        out[found.group(1)] = "\n".join(lines[i + 2 : end]) + "\n"
    return out


def without_times(data: dict[str, Any]) -> dict[str, Any]:
    """``plan.json`` without its times: ``seconds``, ``stage_seconds`` and each stage's
    ``seconds``."""
    out = {k: v for k, v in data.items() if k not in ("seconds", "stage_seconds")}
    out["stages"] = [{k: v for k, v in s.items() if k != "seconds"} for s in data["stages"]]
    return out


@pytest.fixture(scope="module")
def blocks() -> dict[str, str]:
    found = marked_blocks()
    assert set(found) == {
        "mc.json",
        "job.json",
        "summary",
        "hostfile.fra",
        "hostfile.par",
        "ranks.txt",
        "plan.json",
    }
    return found


def test_the_worked_example_is_reproduced_exactly(
    blocks: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("mc.json").write_text(blocks["mc.json"], encoding="utf-8")
    Path("job.json").write_text(blocks["job.json"], encoding="utf-8")
    result = CliRunner().invoke(main, ["plan", "job.json", "mc.json", "--out", "plan"])
    assert result.exit_code == 0, result.output
    out = Path("plan")
    assert sorted(p.name for p in out.iterdir()) == [
        "hostfile.fra",
        "hostfile.par",
        "plan.json",
        "ranks.txt",
    ]
    for name in ("hostfile.fra", "hostfile.par", "ranks.txt"):
        assert (out / name).read_text(encoding="utf-8") == blocks[name], name
    written = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert "seconds" in written and "stage_seconds" in written
    assert without_times(written) == json.loads(blocks["plan.json"])
    plan = make_plan("job.json", "mc.json")
    assert plan.to_dict(times=False) == json.loads(blocks["plan.json"])
    assert plan.summary(times=False) + "\n" == blocks["summary"]
    # the command prints the same lines, with times, then the files written
    printed = result.stdout.splitlines()
    shown = blocks["summary"].splitlines()
    assert printed[0] == shown[0] and printed[5:7] == shown[5:7]
    assert (
        printed[-1] == "wrote plan/plan.json, plan/hostfile.fra, plan/hostfile.par, plan/ranks.txt"
    )
