"""Real projects' pull requests recorded under ``tests/fixtures/real_pulls/``
(``regenerate.py`` there): loading them, replaying codecovcli's recorded
requests and payload against a real ``covworker serve``, and reading the
figures back out of a Codecov-style comment."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.paths import FIXTURES

REAL_PULLS = FIXTURES / "real_pulls"


@dataclass(frozen=True)
class RecordedUpload:
    requests: list[dict[str, Any]]  # codecovcli's POSTs: create-commit, -report, -upload
    payload: bytes  # what it PUT to the storage URL


@dataclass(frozen=True)
class RecordedPull:
    name: str
    oracle: dict[str, Any]
    files: list[dict[str, Any]]  # GitHub's comparison ``files[]``
    base: RecordedUpload
    head: RecordedUpload

    @property
    def number(self) -> int:
        return int(self.oracle["pull"]["number"])

    @property
    def base_sha(self) -> str:
        return str(self.oracle["pull"]["base"])

    @property
    def head_sha(self) -> str:
        return str(self.oracle["pull"]["head"])


def recorded_pulls() -> list[str]:
    return sorted(p.name for p in REAL_PULLS.iterdir() if (p / "oracle.json").is_file())


def load_pull(name: str) -> RecordedPull:
    folder = REAL_PULLS / name

    def side(s: str) -> RecordedUpload:
        return RecordedUpload(
            json.loads((folder / s / "requests.json").read_text()),
            gzip.decompress((folder / s / "payload.json.gz").read_bytes()),
        )

    return RecordedPull(
        name,
        json.loads((folder / "oracle.json").read_text()),
        json.loads((folder / "compare.json").read_text())["files"],
        side("base"),
        side("head"),
    )


def replay(upload: RecordedUpload, base_url: str, slug: str, token: str) -> None:
    """The uploader's calls again, byte for byte, to another server and repository:
    create-commit, create-report, create-upload, then the payload PUT to the
    storage URL the server answers with."""
    encoded = slug.replace("/", "::::")
    headers = {"Authorization": f"token {token}"}
    put_url = None
    with httpx.Client(timeout=30) as client:
        for r in upload.requests:
            path = re.sub(r"^/upload/github/[^/]+", f"/upload/github/{encoded}", r["path"])
            answer = client.post(base_url + path, json=r["json"], headers=headers)
            assert answer.status_code in (200, 201), (path, answer.status_code, answer.text)
            if path.endswith("/uploads"):
                put_url = answer.json()["raw_upload_location"]
        assert put_url is not None, "no create-upload call was recorded"
        stored = client.put(put_url, content=upload.payload)
        assert stored.status_code in (200, 201), (stored.status_code, stored.text)


def github_entries(
    files: list[dict[str, Any]],
) -> list[tuple[str, str, str | None, dict[str, Any]]]:
    """The comparison's files for ``FakeGitHub.add_diff``, with their own counts."""
    return [
        (
            f["filename"],
            f["status"],
            f.get("patch"),
            {k: f[k] for k in ("additions", "deletions", "changes", "previous_filename") if k in f},
        )
        for f in files
    ]


def coverage_diff_rows(body: str) -> dict[str, list[str]]:
    """The fenced "Coverage Diff" table of a comment: row name -> [sign, base,
    head, change] as printed (no change cell when the change is zero)."""
    block = re.search(r"```diff\n(.*?)```", body, re.S)
    assert block is not None, "the comment has no Coverage Diff block"
    rows: dict[str, list[str]] = {}
    names = "Coverage|Complexity|Files|Lines|Branches|Hits|Misses|Partials"
    for line in block[1].splitlines():
        if m := re.match(rf"^([+\- ]) ({names})\s+(.*)$", line):
            rows[m[2]] = [m[1], *m[3].split()]
    return rows


def missing_lines_tables(
    body: str,
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The two "Files with missing lines" tables: path -> its cells, links removed
    (the patch table: Patch %, Lines; the files table: Coverage Δ, arrow)."""
    tables: list[dict[str, tuple[str, ...]]] = []
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("| [Files with missing lines]"):
            continue
        rows: dict[str, tuple[str, ...]] = {}
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            cells = [re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", c).strip()
                     for c in row.strip().strip("|").split("|")]  # fmt: skip
            rows[cells[0].replace("\\", "")] = tuple(cells[1:])
        tables.append(rows)
    while len(tables) < 2:
        tables.append({})
    return tables[0], tables[1]
