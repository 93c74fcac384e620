"""Every Python and JSON example of README.md and docs/*.md runs, so none can rot (issue 13).

The fenced blocks of each Markdown file are taken in order:

* ```` ```python ```` blocks are executed, all blocks of one file in one namespace, in order;
* ```` ```json ```` blocks are parsed as JSON; those holding a ``"family"`` key are instances
  and must pass ``topoopt.load(dict)``;
* every other block (``console``, ``sh``, ``toml``, ``text``, indented commands) is left alone.

A block that must not run (it needs Gurobi or the network, or minutes of work) is preceded by
the line ``<!-- docs-test: skip (reason) -->``; the reason is shown as the skip reason. A
block that needs the measured tables (``data:`` names, see docs/gpuselect.md) skips when they
are absent.

Each file runs in a fresh Python process (examples register solvers and set limits), in a
scratch folder that links the repository's top-level entries except the ``topoopt`` package
itself: examples read ``instances/...`` as from the repository root and write nowhere in the
checkout. One test per (file, block), with ids such as ``docs/gpuselect.md[2]-python-L187``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from topoopt.bench.supervisor import _kill_group  # the benchmark's own group kill

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
TESTED = ("python", "json")
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((.+)\)$")
FILE_TIMEOUT_S = 120


def doc_files() -> list[Path]:
    """README.md and every docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One tested fenced block: its file (relative to the root), index among the file's tested
    blocks, first code line, language, code and skip reason (``None``: run it)."""

    file: str
    index: int
    line: int
    lang: str
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.file}[{self.index}]-{self.lang}-L{self.line}"


def blocks(path: Path) -> list[Block]:
    """The ``python`` and ``json`` fenced blocks of the Markdown file ``path``.

    Raises ``ValueError`` for an unclosed fence or a ``docs-test`` marker that is malformed or
    not right before a tested block.
    """
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    marker: tuple[int, str] | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        found = MARKER.match(text)
        if found:
            skip = SKIP.match(found.group(1))
            if not skip:
                raise ValueError(f"{name}:{i + 1}: expected <!-- docs-test: skip (reason) -->")
            marker = (i + 1, skip.group(1))
            i += 1
            continue
        fence = FENCE.match(text)
        if not fence:
            if text.strip() and marker is not None:
                raise ValueError(f"{name}:{marker[0]}: docs-test marker not before a block")
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{name}:{i + 1}: fenced block never closed")
        lang = fence.group(1).lower()
        if lang in TESTED:
            code = "\n".join(lines[i + 1 : end]) + "\n"
            out.append(Block(name, len(out), i + 2, lang, code, marker[1] if marker else None))
        elif marker is not None:
            raise ValueError(f"{name}:{marker[0]}: docs-test marker before a {lang!r} block")
        marker = None
        i = end + 1
    if marker is not None:
        raise ValueError(f"{name}:{marker[0]}: docs-test marker not before a block")
    return out


# ----------------------------------------------------------------------------- the child process


def _run_block(block: Block, namespace: dict[str, Any]) -> None:
    if block.lang == "python":
        # Leading newlines: tracebacks give the Markdown file's own line numbers.
        source = "\n" * (block.line - 1) + block.code
        exec(compile(source, block.file, "exec"), namespace)
        return
    data = json.loads(block.code)
    if isinstance(data, dict) and "family" in data:
        import topoopt

        topoopt.load(data)


def run_file(relative: str, out: Path) -> None:
    """Run the tested blocks of one file in the current process and working directory,
    appending one JSON line per block to ``out`` as it finishes."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with out.open("a", encoding="utf-8") as sink:
        for block in blocks(ROOT / relative):
            started = time.perf_counter()
            if block.skip is not None:
                status, detail = "skipped", f"docs-test: skip ({block.skip})"
            else:
                try:
                    _run_block(block, namespace)
                    status, detail = "passed", ""
                except Exception as exc:
                    if type(exc).__name__ == "DataNotFoundError":
                        status, detail = "skipped", f"measured data absent: {exc}"
                    else:
                        status, detail = "failed", traceback.format_exc()
            elapsed = time.perf_counter() - started
            outcome = {**asdict(block), "status": status, "detail": detail, "s": elapsed}
            sink.write(json.dumps(outcome) + "\n")
            sink.flush()
            print(f"--- {block.id}: {status} in {elapsed:.2f} s", flush=True)


def _scratch_folder(into: Path) -> None:
    """Link the repository's top-level entries (not the package, not hidden ones) into ``into``."""
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in {"topoopt", "build"}:
            continue
        if entry.name.endswith(".egg-info"):
            continue
        (into / entry.name).symlink_to(entry)


CHILD = """\
import importlib.util, pathlib, sys
spec = importlib.util.spec_from_file_location("docs_runner", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["docs_runner"] = module
spec.loader.exec_module(module)
module.run_file(sys.argv[2], pathlib.Path(sys.argv[3]))
"""


@functools.cache
def outcomes(relative: str) -> dict[int, dict[str, Any]]:
    """Run one file's blocks in a fresh process, once per session (failures included): the
    outcome of every block, or for the blocks a crash or the timeout left unrun, why."""
    with tempfile.TemporaryDirectory(prefix="topoopt-docs-") as scratch:
        folder = Path(scratch) / "work"
        folder.mkdir()
        _scratch_folder(folder)
        result_file = Path(scratch) / "outcomes.jsonl"
        env = dict(os.environ)
        if "TOPOOPT_DATA" not in env and SHARED_DATA.is_dir():
            env["TOPOOPT_DATA"] = str(SHARED_DATA)  # the scratch folder is not a checkout
        command = [sys.executable, "-c", CHILD, __file__, relative, str(result_file)]
        log_file = Path(scratch) / "output.txt"
        # Output goes to a file and the runner leads its own process group: a process it
        # leaves behind (a benchmark worker) can neither hold a pipe open nor outlive a kill.
        with log_file.open("wb") as log:
            proc = subprocess.Popen(
                command,
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                returncode = proc.wait(timeout=FILE_TIMEOUT_S)
                why = f"the example runner exited with status {returncode}"
            except subprocess.TimeoutExpired:
                why = f"the file's examples ran over {FILE_TIMEOUT_S} s"
            finally:
                _kill_group(proc)
        output = log_file.read_text(encoding="utf-8", errors="replace")[-6000:]
        lines = result_file.read_text(encoding="utf-8").splitlines() if result_file.exists() else []
    found = {item["index"]: item for item in map(json.loads, lines)}
    first_missing = True
    for block in blocks(ROOT / relative):
        if block.index not in found:
            where = "while running this block" if first_missing else "before this block ran"
            first_missing = False
            detail = f"{why} {where}:\n{output}"
            found[block.index] = {**asdict(block), "status": "failed", "detail": detail}
    return found


def _all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in blocks(path)]


if __name__ != "docs_runner":  # the child process (CHILD) needs no tests
    import pytest

    @pytest.mark.parametrize("block", _all_blocks(), ids=lambda b: b.id)
    def test_doc_example(block: Block) -> None:
        """The block runs (Python) or loads (JSON) as the module docstring says."""
        outcome = outcomes(block.file)[block.index]
        assert outcome["line"] == block.line
        if outcome["status"] == "skipped":
            pytest.skip(outcome["detail"])
        if outcome["status"] == "failed":
            pytest.fail(
                f"{block.file}:{block.line} ({block.lang} block {block.index}) failed:\n"
                f"{outcome['detail']}",
                pytrace=False,
            )

    def test_block_parser(tmp_path: Path) -> None:
        """Fences are found with their languages, skip markers attach to the next block, and
        misplaced markers and unclosed fences are errors."""
        text = (
            "# t\n\n```python\nx = 1\n```\n\n    indented = 'not a block'\n\n"
            "<!-- docs-test: skip (needs Gurobi) -->\n```python\nimport gurobipy\n```\n\n"
            '```console\n$ topoopt solvers\n```\n\n```json\n{"a": 1}\n```\n'
        )
        path = tmp_path / "t.md"
        path.write_text(text, encoding="utf-8")
        found = blocks(path)
        assert [(b.index, b.lang, b.line, b.skip) for b in found] == [
            (0, "python", 4, None),
            (1, "python", 11, "needs Gurobi"),
            (2, "json", 19, None),
        ]
        assert found[1].code == "import gurobipy\n"
        for bad in (
            "<!-- docs-test: skip (x) -->\n```console\n$ ls\n```\n",
            "<!-- docs-test: skip (x) -->\ntext\n```python\n```\n",
            "<!-- docs-test: skip -->\n```python\n```\n",
            "```python\nx = 1\n",
        ):
            path.write_text(bad, encoding="utf-8")
            with pytest.raises(ValueError):
                blocks(path)

    def test_every_doc_file_is_parsed() -> None:
        """README.md and every docs/*.md parse (fences closed, markers placed), and the
        README's Python example is among the tested blocks."""
        found = _all_blocks()
        assert any(b.file == "README.md" and b.lang == "python" for b in found)
        assert {b.file for b in found} >= {"README.md", "docs/gpuselect.md"}
