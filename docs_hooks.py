"""MkDocs hook: publish the repository files the documentation links to.

The pages of ``docs/`` link to files outside it: benchmark reports (``../benchmarks/...md``
with their PNG figures), source files (``../topoopt/...py``), test examples. A plain MkDocs
build cannot follow those links (``--strict`` fails on them). This hook adds each linked
repository file to the site under ``repo/<path>``, following the links of the added Markdown
files in turn:

* a Markdown file becomes a page of its own (its relative links and images keep working);
* an image or another binary file is copied as is;
* any other text file (Python, JSON, CSV, ...) becomes a page showing it in a code block.

The links in every page are rewritten to the published copies. A link to a file that does
not exist is left alone, so ``mkdocs build --strict`` still reports it.

It also renders the HTTP service's OpenAPI document (``topoopt.serve.openapi``) as the page
``service-api.md`` and publishes the document as ``openapi.json``.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s#]+)(#[^)\s]*)?(\))")
"""A Markdown inline link or image: ``[text](target#anchor)``."""
COPIED = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".html", ".pdf"}
"""Suffixes published as they are (no code page)."""
CODE_LANGUAGE = {".py": "python", ".json": "json", ".jsonl": "json", ".toml": "toml"}

_published: dict[str, str] = {}
"""Repository path (POSIX, relative to the root) -> ``src_uri`` in the site."""


def _root(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def _site_uri(repo_path: str, docs_prefix: str) -> str:
    if repo_path.startswith(docs_prefix):
        return repo_path[len(docs_prefix) :]
    suffix = Path(repo_path).suffix
    page = suffix == ".md" or suffix in COPIED
    return "repo/" + repo_path + ("" if page else ".md")


def _targets(text: str, source: str) -> list[str]:
    """Repository paths of the relative links of ``text`` in the file at ``source``."""
    out = []
    for match in LINK.finditer(text):
        target = match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            continue
        out.append(posixpath.normpath(posixpath.join(posixpath.dirname(source), target)))
    return out


def _code_page(repo_path: str, text: str) -> str:
    language = CODE_LANGUAGE.get(Path(repo_path).suffix, "text")
    return f"# `{repo_path}`\n\n```{language}\n{text.rstrip()}\n```\n"


API_PAGE = "service-api.md"
"""The page rendering the HTTP service's OpenAPI document (generated, not in ``docs/``)."""


def _api_files(files: Files, config: Any) -> None:
    """Add the HTTP API reference: ``service-api.md`` rendered from the OpenAPI document the
    service generates from its code, and the document itself as ``openapi.json``."""
    import json

    from topoopt.serve.openapi import openapi_document, render_markdown

    document = openapi_document()
    files.append(File.generated(config, API_PAGE, content=render_markdown(document)))
    files.append(
        File.generated(config, "openapi.json", content=json.dumps(document, indent=2) + "\n")
    )


def on_files(files: Files, config: Any) -> Files:
    """Add every repository file reachable by relative links from the documentation, and the
    HTTP API reference."""
    root = _root(config)
    docs = Path(config["docs_dir"]).resolve().relative_to(root).as_posix() + "/"
    _published.clear()
    pending = [docs + f.src_uri for f in files.documentation_pages()]
    seen = set(pending)
    while pending:
        source = pending.pop()
        text = (root / source).read_text(encoding="utf-8")
        for target in _targets(text, source):
            path = root / target
            if target in seen or target.startswith("..") or not path.is_file():
                continue
            seen.add(target)
            if target.startswith(docs):
                continue  # a page or asset MkDocs already has
            uri = _site_uri(target, docs)
            _published[target] = uri
            if path.suffix in COPIED or path.suffix == ".md":
                files.append(File.generated(config, uri, abs_src_path=str(path)))
                if path.suffix == ".md":
                    pending.append(target)
            else:
                content = _code_page(target, path.read_text(encoding="utf-8"))
                files.append(File.generated(config, uri, content=content))
    _api_files(files, config)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point the page's links to repository files at their published copies."""
    root = _root(config)
    docs = Path(config["docs_dir"]).resolve().relative_to(root).as_posix() + "/"
    here = page.file.src_uri
    source = next((p for p, uri in _published.items() if uri == here), docs + here)

    def relink(match: re.Match[str]) -> str:
        target = match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if resolved in _published:
            uri = _published[resolved]
        elif resolved.startswith(docs) and source not in _published:
            return match.group(0)
        elif resolved.startswith(docs):
            uri = resolved[len(docs) :]
        else:
            return match.group(0)
        new = posixpath.relpath(uri, posixpath.dirname(here) or ".")
        return match.group(1) + new + (match.group(3) or "") + match.group(4)

    return LINK.sub(relink, markdown)
