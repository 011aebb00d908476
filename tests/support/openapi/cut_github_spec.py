"""Cut GitHub's official OpenAPI description down to the calls covworker makes.

The full description (npm ``@octokit/openapi``, ``generated/api.github.com.json``)
is hundreds of MB and loads slowly in Prism; the tests validate against the
operations below and every component they reference, nothing else.

Regenerate (the version is recorded in the output's ``info.x-cut-from``):

    npm install --prefix /tmp/octokit-openapi @octokit/openapi@23.0.2
    python tests/support/openapi/cut_github_spec.py \\
        /tmp/octokit-openapi/node_modules/@octokit/openapi > tests/support/openapi/github.json
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

#: (path, method) of every GitHub call in app/providers/github.py.
OPERATIONS = [
    ("/repos/{owner}/{repo}/commits/{commit_sha}/pulls", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    ("/repos/{owner}/{repo}/compare/{basehead}", "get"),
    # A pull request's files, page by page, when the comparison stops at 300.
    ("/repos/{owner}/{repo}/pulls/{pull_number}/files", "get"),
    ("/repos/{owner}/{repo}/contents/{path}", "get"),
    ("/repos/{owner}/{repo}/statuses/{sha}", "post"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "delete"),
    ("/repos/{owner}/{repo}/installation", "get"),
    ("/app/installations/{installation_id}/access_tokens", "post"),
    # Read by the @octokit/fixtures create-status scenario's replay.
    ("/repos/{owner}/{repo}/commits/{ref}/statuses", "get"),
    ("/repos/{owner}/{repo}/commits/{ref}/status", "get"),
    # The repository: its default branch, whether it is private, and (with a
    # signed-in user's token) what that user may do there (app/web/signin).
    ("/repos/{owner}/{repo}", "get"),
    # The signed-in user (app/web/oauth.py).
    ("/user", "get"),
]


def refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            found.add(ref)
        for value in node.values():
            refs(value, found)
    elif isinstance(node, list):
        for value in node:
            refs(value, found)


#: Prism matches a path parameter to one segment and ignores GitHub's
#: ``x-multi-segment`` (a file path such as ``src/pkg/mod.py``), so the cut
#: repeats the contents operation for paths of up to this many segments,
#: the operation otherwise unchanged.
CONTENTS = "/repos/{owner}/{repo}/contents/{path}"
CONTENTS_SEGMENTS = 8


def multi_segment(path: str, item: dict[str, Any]) -> dict[str, Any]:
    """Copies of the contents operation for a path of 2..N segments."""
    copies: dict[str, Any] = {}
    for n in range(2, CONTENTS_SEGMENTS + 1):
        dirs = [f"dir{i}" for i in range(1, n)]
        templated = path.replace("{path}", "/".join(f"{{{d}}}" for d in dirs) + "/{path}")
        op = copy.deepcopy(item["get"])
        op["operationId"] = f"{op['operationId']}-{n}-segments"
        op["parameters"] = [
            {"name": d, "in": "path", "required": True, "schema": {"type": "string"}} for d in dirs
        ] + op["parameters"]
        copies[templated] = {"get": op}
    return copies


def cut(full: dict[str, Any], version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, method in OPERATIONS:
        item = full["paths"][path]
        paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
        paths[path][method] = item[method]
        if path == CONTENTS:
            paths.update(multi_segment(path, item))
    seen: set[str] = set()
    todo: set[str] = set()
    refs(paths, todo)
    components: dict[str, dict[str, Any]] = {}
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        node = full["components"][kind][name]
        components.setdefault(kind, {})[name] = node
        found: set[str] = set()
        refs(node, found)
        todo |= found - seen
    info = dict(full["info"])
    info["x-cut-from"] = f"@octokit/openapi@{version} generated/api.github.com.json"
    return {
        "openapi": full["openapi"],
        "info": info,
        "servers": full.get("servers", []),
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main() -> None:
    package = Path(sys.argv[1])
    version = json.loads((package / "package.json").read_text())["version"]
    full = json.loads((package / "generated" / "api.github.com.json").read_text())
    json.dump(cut(full, version), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
