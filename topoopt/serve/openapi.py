"""The OpenAPI 3.1 document of the service, generated from the endpoint table.

:data:`topoopt.serve.app.ENDPOINTS` says, per endpoint, its method, path, handler, the JSON
Schemas of its request and answer (:mod:`topoopt.serve.api`, the same schemas the server
checks requests against) and its error statuses; the handler's docstring gives the summary
and description. Every registered family's instance schema (``topoopt instances schema``) is
a component (``Instance.<family>``), and the request's ``instance`` is one of them. The
server answers the document at ``/openapi.json``; the documentation site renders it
(``docs/service-api.md``, by ``docs_hooks.py``).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from typing import Any

import topoopt

__all__ = ["openapi_document", "render_markdown"]

OPENAPI_VERSION = "3.1.0"


def _rebase(schema: Any, prefix: str) -> Any:
    """``schema`` with its ``$defs`` references pointing into the components."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                out[key] = f"#/components/schemas/{prefix}.{value.removeprefix('#/$defs/')}"
            elif key in ("$schema", "$defs"):
                continue
            else:
                out[key] = _rebase(value, prefix)
        return out
    if isinstance(schema, list):
        return [_rebase(item, prefix) for item in schema]
    return schema


def _instance_components() -> dict[str, Any]:
    """``Instance.<family>`` for every family with a schema (its ``$defs`` beside it)."""
    out: dict[str, Any] = {}
    for name in topoopt.families():
        schema = topoopt.get_family(name).schema
        if schema is None:
            continue
        prefix = f"Instance.{name}"
        out[prefix] = _rebase(copy.deepcopy(dict(schema)), prefix)
        for key, definition in dict(schema.get("$defs", {})).items():
            out[f"{prefix}.{key}"] = _rebase(copy.deepcopy(definition), prefix)
    return out


def _doc(handler: Any) -> tuple[str, str]:
    text = inspect.cleandoc(handler.__doc__ or "")
    summary, _, rest = text.partition("\n\n")
    return " ".join(summary.split()), rest.strip()


def _with_instances(schema: Mapping[str, Any], families: list[str]) -> dict[str, Any]:
    """A request schema whose ``instance`` is one of the families' instance schemas."""
    out = copy.deepcopy(dict(schema))
    properties = out.get("properties", {})
    if "instance" in properties and families:
        described = properties["instance"].get("description", "")
        properties["instance"] = {
            "description": described,
            "oneOf": [{"$ref": f"#/components/schemas/Instance.{f}"} for f in families],
        }
    return out


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the service (JSON-ready)."""
    from topoopt.serve import api
    from topoopt.serve.app import ENDPOINTS

    instances = _instance_components()
    families = [k.removeprefix("Instance.") for k in instances if k.count(".") == 1]
    components: dict[str, Any] = {"Error": api.ERROR, **instances}
    paths: dict[str, Any] = {}
    for endpoint in ENDPOINTS:
        summary, description = _doc(endpoint.handler)
        operation: dict[str, Any] = {
            "operationId": endpoint.handler.__name__,
            "summary": summary,
            "tags": [endpoint.tag],
        }
        if description:
            operation["description"] = description
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_names(endpoint.path)
        ]
        parameters += [
            {
                "name": n,
                "in": "query",
                "required": False,
                "schema": {"type": "string"},
                "description": d,
            }
            for n, d in endpoint.query.items()
        ]
        if parameters:
            operation["parameters"] = parameters
        if endpoint.request is not None:
            title = endpoint.request["title"]
            components[title] = _with_instances(endpoint.request, families)
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{title}"}}
                },
            }
        ok: dict[str, Any] = {"description": "OK"}
        if endpoint.response is not None:
            schema: dict[str, Any] = dict(endpoint.response)
            if "title" in schema:
                components[schema["title"]] = schema
                schema = {"$ref": f"#/components/schemas/{schema['title']}"}
            ok["content"] = {endpoint.media_type: {"schema": schema}}
        else:
            ok["content"] = {endpoint.media_type: {"schema": {"type": "string"}}}
        responses: dict[str, Any] = {"200": ok}
        for status in endpoint.errors:
            responses[str(status)] = {
                "description": api.ERROR_STATUSES[status],
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
            if status == 503:
                responses[str(status)]["headers"] = {
                    "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds."}
                }
        operation["responses"] = responses
        if endpoint.auth:
            operation["security"] = [{"bearer": []}]
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "topoopt",
            "version": topoopt.__version__,
            "description": "Topology-aware placement of distributed-training jobs over HTTP "
            "(`topoopt serve`, docs/service.md). The bearer token is required only when the "
            "server was started with `--token-file`.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def render_markdown(document: Mapping[str, Any]) -> str:
    """The document as a Markdown reference: one section per endpoint (what it takes, what it
    answers, its statuses); the request and answer schemas in full at the end."""
    import json

    lines = [
        f"# HTTP API reference (OpenAPI {document['openapi']})",
        "",
        "Generated from the code (`topoopt.serve.openapi.openapi_document()`); the server "
        "answers the same document at `GET /openapi.json`. How to run and call the service: "
        "[service.md](service.md).",
        "",
        "| method | path | summary |",
        "|---|---|---|",
    ]
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            lines.append(f"| `{method.upper()}` | `{path}` | {op['summary']} |")
    schemas = document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            lines += ["", f"## `{method.upper()} {path}`", "", op["summary"], ""]
            if op.get("description"):
                lines += [op["description"], ""]
            for parameter in op.get("parameters", []):
                lines.append(
                    f"* parameter `{parameter['name']}` ({parameter['in']})"
                    + (f": {parameter['description']}" if parameter.get("description") else "")
                )
            body = op.get("requestBody")
            if body is not None:
                ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
                lines.append(f"* body: `{ref}` (below)")
            if op.get("security"):
                lines.append("* needs the bearer token when the server has one")
            lines += ["", "| status | meaning |", "|---|---|"]
            for status, response in op["responses"].items():
                meaning = response["description"]
                content = response.get("content", {})
                for media, spec in content.items():
                    ref = spec["schema"].get("$ref")
                    if ref and status == "200":
                        meaning += f": `{ref.rsplit('/', 1)[1]}` ({media})"
                    elif status == "200":
                        meaning += f" ({media})"
                lines.append(f"| {status} | {meaning} |")
    lines += ["", "## Schemas", ""]
    for name, schema in schemas.items():
        if name.startswith("Instance."):
            continue
        lines += [f"### `{name}`", "", "```json", json.dumps(schema, indent=2), "```", ""]
    families = sorted({n.split(".")[1] for n in schemas if n.startswith("Instance.")})
    lines += [
        "### Instances",
        "",
        "The `instance` of a request is one of the families' instance schemas, "
        "`Instance.<family>` in the document: "
        + ", ".join(f"`{f}`" for f in families)
        + " (each is what `topoopt instances schema FAMILY` and `GET /v1/schemas/FAMILY` "
        "give; see [input.md](input.md)).",
        "",
    ]
    return "\n".join(lines)
