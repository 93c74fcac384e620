"""The Go client of docs/service.md ("From Go"), compiled and run against the session's server
when a Go toolchain is installed (skipped otherwise: CI machines have none)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, Server

GO = shutil.which("go")
pytestmark = pytest.mark.skipif(GO is None, reason="no Go toolchain (`go`) on this machine")

MAIN = """package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"example.com/check/topoopt"
)

// args: URL INSTANCE_FILE SOLVER; prints the result, or the APIError, as JSON
func main() {
	instance, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := topoopt.SolveRequest{Instance: instance, Solver: os.Args[3], TimeLimit: 2}
	result, err := topoopt.Solve(ctx, os.Args[1], "", req)
	var apiErr *topoopt.APIError
	if errors.As(err, &apiErr) {
		out, _ := json.Marshal(map[string]any{"status": apiErr.Status, "error": apiErr.Kind})
		fmt.Println(string(out))
		return
	}
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}
"""


@pytest.fixture(scope="module")
def go_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs' Go package plus a small main, built into one binary."""
    source = (ROOT / "docs/service.md").read_text()
    blocks = re.findall(r"```go\n(.*?)```", source, re.S)
    assert len(blocks) == 1, "docs/service.md should have exactly one Go block"
    module = tmp_path_factory.mktemp("goclient")
    (module / "go.mod").write_text("module example.com/check\n\ngo 1.19\n")
    (module / "topoopt").mkdir()
    (module / "topoopt/client.go").write_text(blocks[0])
    (module / "main.go").write_text(MAIN)
    env = {**os.environ, "GOCACHE": str(module / ".cache"), "GOFLAGS": "-mod=mod"}
    assert GO is not None
    for command in ([GO, "vet", "./..."], [GO, "build", "-o", "client", "."]):
        proc = subprocess.run(command, cwd=module, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    return module / "client"


def run(go_client: Path, server: Server, solver: str) -> dict[str, object]:
    instance = ROOT / "instances/placement/arnold-paper/i-even-a0.5.json"
    proc = subprocess.run(
        [str(go_client), server.url, str(instance), solver],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    answer: dict[str, object] = json.loads(proc.stdout)
    return answer


def test_the_go_client_gets_a_placement(go_client: Path, server: Server) -> None:
    answer = run(go_client, server, "placement/best-fit")
    rank_order = answer["solution"]["rank_order"]  # type: ignore[index]
    assert answer["status"] in ("optimal", "feasible")
    instance = json.loads((ROOT / "instances/placement/arnold-paper/i-even-a0.5.json").read_text())
    job, gpus_per_node = instance["job"], instance["topology"]["gpus_per_node"]
    assert len(rank_order) == job["dp"] * job["tp"] * job["pp"] // gpus_per_node
    assert len(set(rank_order)) == len(rank_order)


def test_the_go_client_reads_an_error(go_client: Path, server: Server) -> None:
    assert run(go_client, server, "placement/no-such-solver") == {
        "status": 400,
        "error": "bad_input",
    }
