"""A fake GitHub REST API for the tests, and Prism in front of it.

:class:`FakeGitHub` answers the calls covworker makes with the official
examples of GitHub's OpenAPI description (``openapi/github.json``, cut from
``@octokit/openapi``) with the test's values put in: pull requests, a
comparison, file contents, statuses and issue comments it keeps in memory.
A fake only counts behind :func:`prism_proxy`: Stoplight Prism in proxy
mode with ``--errors`` checks every request covworker sends and every
answer the fake gives against the same description, and turns a violation
into an error the test sees (:attr:`PrismProxy.violations`). A test
process starts one Prism per description and lends it to each test in turn,
in front of that test's fake (a relay it points at the fake).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import copy
import itertools
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

#: A file of a comparison: (filename, status, patch[, other fields of GitHub's entry]).
DiffFile = tuple[str, str, str | None] | tuple[str, str, str | None, dict[str, Any]]
#: ``add_diff``'s base and head for every comparison of a repository that
#: has no exact one: a load run's bases and heads are the commits that
#: settle as it goes.
ANY_BASE = "*"

GITHUB_SPEC = Path(__file__).with_name("openapi") / "github.json"
PRISM = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "prism"
#: The mark of a test that talks to a provider through Prism: skipped where
#: .ci/run has not installed it.
needs_prism = pytest.mark.skipif(not PRISM.exists(), reason="Prism not installed (.ci/run)")

_EXAMPLES: dict[str, Any] | None = None


def example(name: str) -> Any:
    """A deep copy of one of the description's examples (``components/examples``)."""
    global _EXAMPLES
    if _EXAMPLES is None:
        _EXAMPLES = json.loads(GITHUB_SPEC.read_text())["components"]["examples"]
    return copy.deepcopy(_EXAMPLES[name]["value"])


#: GitHub's most characters in a comment body, and its answer to a longer one.
MAX_COMMENT_CHARS = 65_536
TOO_LONG = {
    "message": "Validation Failed",
    "errors": [
        {
            "resource": "IssueComment",
            "code": "custom",
            "field": "body",
            "message": f"body is too long (maximum is {MAX_COMMENT_CHARS} characters)",
        }
    ],
    "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
    "status": "422",
}


def _too_long(body: Any) -> bool:
    return isinstance(body, dict) and len(str(body.get("body") or "")) > MAX_COMMENT_CHARS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class FakePull:
    number: int
    base_sha: str
    base_branch: str
    head_sha: str
    head_branch: str
    state: str = "open"


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    #: When the request arrived (epoch seconds).
    at: float = 0.0
    #: The query string, as sent.
    query: str = ""


@dataclass
class FakeGitHubState:
    pulls: dict[tuple[str, int], FakePull] = field(default_factory=dict)
    #: (repo, base, head) -> [(filename, status, patch[, the entry's other fields])]
    diffs: dict[tuple[str, str, str], list[DiffFile]] = field(default_factory=dict)
    #: (repo, ref, path) -> bytes
    files: dict[tuple[str, str, str], bytes] = field(default_factory=dict)
    #: (repo, sha) -> [status bodies, in order]
    statuses: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    #: comment id -> (repo, issue, body)
    comments: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    #: Answers to give before the real one: (method, path regex) -> [status codes]
    failures: list[tuple[str, str, int, dict[str, str]]] = field(default_factory=list)
    #: Seconds every answer waits (a provider's latency).
    latency_s: float = 0.0
    #: Repositories that answer 404 to everything (no access).
    forbidden: set[str] = field(default_factory=set)
    #: SHAs the fake has no commit for, answered as GitHub answers them: 422
    #: "No commit found for SHA" (its pull requests, a status), 404 "No commit
    #: found for the ref" (a file at it). Other SHAs are taken as pushed.
    unknown_commits: set[str] = field(default_factory=set)
    #: Repositories the provider says are private (``private``, GitLab's ``visibility``).
    private: set[str] = field(default_factory=set)
    installation_tokens: int = 0
    #: Lifetime of the installation tokens the fake hands out (GitHub's: one hour).
    installation_token_ttl_s: float = 3600.0
    #: A GitHub App's id and public key: the App's endpoints then check its JWT.
    app: tuple[str, str] | None = None
    #: repo -> its default branch (``GET /repos/{owner}/{repo}``); ``main`` if not set.
    default_branches: dict[str, str] = field(default_factory=dict)
    #: Recorded exchanges (@octokit/fixtures, nock JSON) answered in order
    #: before anything else: a request must match the next one exactly.
    recorded: list[dict[str, Any]] = field(default_factory=list)
    #: Requests that did not match the recorded exchange they were answered with.
    mismatches: list[str] = field(default_factory=list)


class FakeGitHub:
    """The fake's HTTP server on 127.0.0.1 (``start``/``stop``, or ``with``)."""

    def __init__(self) -> None:
        self.state = FakeGitHubState()
        self.lock = threading.Lock()
        self._ids = itertools.count(3_000_000_000)  # comment ids past 2**31, as GitHub's are
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None
        self.errors: list[BaseException] = []
        #: Answers the client hung up on before they were written.
        self.hangups = 0

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                try:
                    fake._handle(self)
                except (BrokenPipeError, ConnectionResetError):
                    # the client hung up before the answer was written: a
                    # lookup whose answer it no longer needed, cut off when
                    # its test's lease ended. GitHub does not fail on that.
                    self.close_connection = True
                    with fake.lock:
                        fake.hangups += 1
                except BaseException as exc:  # surfaced by the test through fake.errors
                    fake.errors.append(exc)
                    raise

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815 - http.server's names

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # socketserver's 5 drops concurrent connects (SYN retry: 1 s)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.errors:
            raise AssertionError(f"the fake GitHub raised: {self.errors!r}")

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the test sets up and reads ------------------------------------

    def add_pull(self, repo: str, pull: FakePull) -> None:
        with self.lock:
            self.state.pulls[(repo, pull.number)] = pull

    def add_diff(self, repo: str, base: str, head: str, files: Sequence[DiffFile]) -> None:
        """The comparison of ``base...head``: each file as (filename, status, patch),
        or with a fourth item, fields of GitHub's entry to set (``additions``,
        ``deletions``, ``changes``, ``previous_filename``: a recorded diff's own)."""
        with self.lock:
            self.state.diffs[(repo, base, head)] = list(files)

    def _diff(self, repo: str, base: str, head: str) -> list[DiffFile] | None:
        """``base...head``'s files as added, else those added for any
        comparison of ``repo`` (``ANY_BASE``); None if neither."""
        with self.lock:
            files = self.state.diffs.get((repo, base, head))
            return self.state.diffs.get((repo, ANY_BASE, ANY_BASE)) if files is None else files

    def add_file(self, repo: str, ref: str, path: str, content: bytes) -> None:
        with self.lock:
            self.state.files[(repo, ref, path)] = content

    def fail(
        self, method: str, path_regex: str, *codes: int, headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next matching requests with these status codes (and headers), in order."""
        with self.lock:
            self.state.failures.extend((method, path_regex, c, headers or {}) for c in codes)

    def calls(self, method: str | None = None, contains: str = "") -> list[Recorded]:
        with self.lock:
            return [
                r
                for r in self.state.requests
                if (method is None or r.method == method) and contains in r.path
            ]

    def comments_on(self, repo: str, issue: int) -> dict[int, str]:
        with self.lock:
            return {
                cid: body
                for cid, (r, n, body) in self.state.comments.items()
                if r == repo and n == issue
            }

    # -- the API -------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        path, _, query = h.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        with self.lock:
            self.state.requests.append(Recorded(h.command, path, body, time.time(), query))
            latency = self.state.latency_s
            failure, failure_headers = None, {}
            for i, (method, regex, code, extra) in enumerate(self.state.failures):
                if method == h.command and re.search(regex, path):
                    failure, failure_headers = code, extra
                    del self.state.failures[i]
                    break
        if latency:
            time.sleep(latency)
        if failure is not None:
            message = (
                "Server Error" if failure >= 500 else "You have exceeded a secondary rate limit"
            )
            self._send(h, failure, {"message": message}, failure_headers)
            return
        with self.lock:
            replay = self.state.recorded.pop(0) if self.state.recorded else None
        if replay is not None:
            expected = (replay["method"].upper(), replay["path"], replay.get("body") or None)
            if (h.command, path, body) != expected:
                with self.lock:
                    self.state.mismatches.append(f"{(h.command, path, body)} != {expected}")
            self._send(h, int(replay["status"]), replay["response"])
            return
        if path.startswith("/app/") or path.endswith("/installation"):
            denied = self._check_app_jwt(h.headers.get("Authorization", ""))
            if denied:
                self._send(
                    h, 401, {"message": denied, "documentation_url": "https://docs.github.com"}
                )
                return
        status, payload = self._route(h.command, path, params, body)
        self._send(h, status, payload)

    def _check_app_jwt(self, authorization: str) -> str | None:
        """Why the App's JWT is refused, or None: RS256, signed by the App, unexpired."""
        import jwt

        if self.state.app is None:
            return "no GitHub App is set up on the fake"
        app_id, public_key = self.state.app
        token = authorization.removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, public_key, algorithms=["RS256"])
        except jwt.PyJWTError as exc:
            return f"A JSON web token could not be decoded: {exc}"
        if str(claims.get("iss")) != app_id or claims["exp"] - claims["iat"] > 600:
            return "'Issuer' claim ('iss') or expiry is wrong"
        return None

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        h.send_response(status)
        if payload is not None:
            h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {"X-RateLimit-Remaining": "4999"}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)

    def _route(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        not_found = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        m = re.fullmatch(r"/app/installations/(\d+)/access_tokens", path)
        if m and method == "POST":
            token = example("installation-token")
            with self.lock:
                self.state.installation_tokens += 1
                token["token"] = f"ghs_fake{self.state.installation_tokens}"
            token["expires_at"] = time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self.state.installation_token_ttl_s)
            )
            return 201, token
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if not m:
            return 404, not_found
        repo, rest = f"{m[1]}/{m[2]}", m[3] or ""
        if repo in self.state.forbidden:
            return 404, not_found
        if rest == "" and method == "GET":
            answer = example("full-repository-default-response")
            with self.lock:
                branch = self.state.default_branches.get(repo, "main")
            # GitHub's example leaves out ``language``, which the schema requires
            # (null: no code detected).
            answer.update(
                name=m[2],
                full_name=repo,
                default_branch=branch,
                language=None,
                private=repo in self.state.private,
                visibility="private" if repo in self.state.private else "public",
            )
            # ``parent`` and ``source`` are there for a fork only, and the example's
            # lack ``language`` too.
            answer.pop("parent", None)
            answer.pop("source", None)
            return 200, answer
        if rest == "/installation" and method == "GET":
            return 200, example("installation")
        sha = re.fullmatch(r"/(?:commits|statuses)/([0-9a-f]+)(?:/pulls)?", rest)
        with self.lock:
            unknown = sha is not None and sha[1] in self.state.unknown_commits
            ref_unknown = params.get("ref", "") in self.state.unknown_commits
        if unknown and sha is not None:
            return 422, {
                "message": f"No commit found for SHA: {sha[1]}",
                "documentation_url": "https://docs.github.com/rest",
                "status": "422",
            }
        if rest.startswith("/contents/") and ref_unknown:
            return 404, {
                "message": f"No commit found for the ref {params['ref']}",
                "documentation_url": "https://docs.github.com/rest",
                "status": "404",
            }
        if (m := re.fullmatch(r"/commits/([0-9a-f]+)/pulls", rest)) and method == "GET":
            with self.lock:
                found = [p for (r, _), p in self.state.pulls.items() if r == repo]
            return 200, [self._pull_json(repo, p, simple=True) for p in found if p.head_sha == m[1]]
        if (m := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "GET":
            with self.lock:
                pull = self.state.pulls.get((repo, int(m[1])))
            return (200, self._pull_json(repo, pull)) if pull else (404, not_found)
        if (m := re.fullmatch(r"/compare/([0-9a-f]+)\.\.\.([0-9a-f]+)", rest)) and method == "GET":
            files = self._diff(repo, m[1], m[2])
            if files is None:
                return 404, not_found
            return 200, self._comparison(m[1], m[2], files)
        if (m := re.fullmatch(r"/pulls/(\d+)/files", rest)) and method == "GET":
            with self.lock:
                pull = self.state.pulls.get((repo, int(m[1])))
            files = self._diff(repo, pull.base_sha, pull.head_sha) if pull else None
            if files is None:
                return 404, not_found
            per_page = int(params.get("per_page", "30"))
            page = int(params.get("page", "1"))
            # GitHub lists at most 3,000 files of a pull request.
            shown = files[:3000][(page - 1) * per_page : page * per_page]
            return 200, [self._diff_entry(*f) for f in shown]
        if (m := re.fullmatch(r"/contents/(.+)", rest)) and method == "GET":
            with self.lock:
                content = self.state.files.get((repo, params.get("ref", ""), m[1]))
            if content is None:
                return 404, not_found
            answer = example("content-file-response-if-content-is-a-file")
            answer.update(
                path=m[1],
                name=m[1].rsplit("/", 1)[-1],
                size=len(content),
                content=base64.b64encode(content).decode(),
            )
            return 200, answer
        if (m := re.fullmatch(r"/statuses/([0-9a-f]+)", rest)) and method == "POST":
            with self.lock:
                self.state.statuses.setdefault((repo, m[1]), []).append(dict(body))
            answer = example("status")
            answer.update(
                state=body["state"],
                description=body.get("description"),
                context=body.get("context", "default"),
                target_url=body.get("target_url"),
            )
            return 201, answer
        if "/comments" in rest and method in ("POST", "PATCH") and _too_long(body):
            return 422, TOO_LONG
        if (m := re.fullmatch(r"/issues/(\d+)/comments", rest)) and method == "POST":
            cid = next(self._ids)
            with self.lock:
                self.state.comments[cid] = (repo, int(m[1]), body["body"])
            answer = example("issue-comment")
            answer.update(id=cid, body=body["body"])
            return 201, answer
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            cid = int(m[1])
            with self.lock:
                existing = self.state.comments.get(cid)
                if existing is None or existing[0] != repo:
                    return 404, not_found
                if method == "DELETE":
                    del self.state.comments[cid]
                    return 204, None
                self.state.comments[cid] = (existing[0], existing[1], body["body"])
            answer = example("issue-comment")
            answer.update(id=cid, body=body["body"])
            return 200, answer
        return 404, not_found

    def _pull_json(self, repo: str, pull: FakePull, *, simple: bool = False) -> dict[str, Any]:
        answer = example("pull-request-simple-items")[0] if simple else example("pull-request")
        answer.update(
            number=pull.number,
            state="closed" if pull.state != "open" else "open",
            html_url=f"https://github.com/{repo}/pull/{pull.number}",
            merged_at="2011-01-26T19:01:12Z" if pull.state == "merged" else None,
        )
        if not simple:
            answer["merged"] = pull.state == "merged"
        # GitHub's own example lists a team without the ``type`` its schema
        # requires; an empty list is what a pull request without reviewers has.
        answer["requested_teams"] = []
        answer["base"].update(sha=pull.base_sha, ref=pull.base_branch)
        answer["head"].update(sha=pull.head_sha, ref=pull.head_branch)
        return dict(answer)

    def _comparison(self, base: str, head: str, files: list[DiffFile]) -> dict[str, Any]:
        answer = example("commit-comparison")
        answer["base_commit"]["sha"] = base
        # GitHub's comparison names at most 300 files.
        answer["files"] = [self._diff_entry(*f) for f in files[:300]]
        return dict(answer)

    def _diff_entry(
        self, name: str, status: str, patch: str | None, fields: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One file of a diff, in GitHub's ``diff-entry`` shape (its own example).

        ``patch`` None: a file GitHub gives no patch for (too large, binary),
        its example's counts kept; ``""``: a file without changed lines (an
        empty file added), listed as GitHub lists it, no ``patch`` and 0
        changes; else the counts of the patch's lines. ``fields`` replace
        GitHub's own fields (a recorded pull request's counts)."""
        f = dict(example("diff-entry-items")[0], filename=name, status=status)
        if patch is None:
            f.pop("patch", None)
            f.update(fields or {})
            return f
        lines = patch.split("\n")
        added = sum(1 for line in lines if line.startswith("+"))
        removed = sum(1 for line in lines if line.startswith("-"))
        f.update(additions=added, deletions=removed, changes=added + removed)
        if patch:
            f["patch"] = patch
        else:
            f.pop("patch", None)
        f.update(fields or {})
        return f


@dataclass
class PrismProxy:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    #: Where this lease's lines start in ``log`` (a Prism serves one lease at a time).
    start: int

    def logged(self) -> bytes:
        """What Prism logged during this lease."""
        with self.log.open("rb") as f:
            f.seek(self.start)
            return f.read()

    def _validator_lines(self) -> list[str]:
        lines = self.logged().decode(errors="replace").splitlines()
        return [line for line in lines if "[VALIDATOR]" in line or "VIOLATIONS" in line]

    def violations(self) -> list[str]:
        """Prism's errors: a request or an answer the description does not allow."""
        return [line for line in self._validator_lines() if "warning" not in line]

    def warnings(self) -> list[str]:
        """Prism's warnings (an answer's status code the description does not list)."""
        return [line for line in self._validator_lines() if "warning" in line]


def _listen(port: int) -> list[str]:
    return ["-p", str(port), "-h", "127.0.0.1"]


#: Tries at a free port: another process can take the port between
#: ``free_port`` and Prism's listen, and Prism then exits (EADDRINUSE).
_PRISM_PORT_TRIES = 3


def _start_prism(spec: Path, upstream: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Prism listening on a free port, or RuntimeError with its log's tail."""
    tail = ""
    for _ in range(_PRISM_PORT_TRIES):
        port = free_port()
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(PRISM), "proxy", str(spec), upstream, "--errors", *_listen(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return process, port
            except OSError:
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise RuntimeError("prism did not start within 120 s") from None
                time.sleep(0.2)
        tail = log.read_text(errors="replace")[-2000:]
        if "EADDRINUSE" not in tail:
            raise RuntimeError(f"prism exited: {tail}")
    raise RuntimeError(f"prism found no free port in {_PRISM_PORT_TRIES} tries: {tail}")


class _Relay:
    """A TCP relay in front of the current lease's fake: a pooled Prism
    proxies to the relay, and each lease points the relay at its own fake.
    Pointing it elsewhere closes the connections it relays, so a connection
    Prism keeps alive never reaches an earlier test's fake."""

    def __init__(self) -> None:
        self._target: tuple[str, int] | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def point_at(self, url: str | None) -> None:
        """Relay new connections to ``url``'s host and port (None: refuse
        them); close every connection relayed so far."""
        target = None
        if url is not None:
            host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
            target = (host, int(port))
        with self._lock:
            self._target, relayed, self._open = target, self._open, set()
        for sock in relayed:
            _close(sock)

    def close(self) -> None:
        self.point_at(None)
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                target = self._target
            try:
                if target is None:
                    raise OSError("no fake behind the relay")
                upstream = socket.create_connection(target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:  # either side done: the exchange is over (HTTP, one connection)
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it
    sock.close()


@dataclass
class _PooledPrism:
    process: subprocess.Popen[bytes]
    port: int
    relay: _Relay
    log: Path


#: Idle Prisms by description: starting one costs about a second of CPU
#: (it reads the whole description), so a test process keeps each it started
#: and lends it to the next test, pointed at that test's fake.
_IDLE: dict[Path, list[_PooledPrism]] = {}
_STARTED: list[_PooledPrism] = []
_POOL_LOCK = threading.Lock()


def _pooled(spec: Path) -> _PooledPrism:
    with _POOL_LOCK:
        idle = _IDLE.setdefault(spec, [])
        while idle:
            prism = idle.pop()
            if prism.process.poll() is None:
                return prism
    relay = _Relay()
    handle, name = tempfile.mkstemp(prefix="prism-", suffix=".log")
    os.close(handle)
    log = Path(name)
    try:
        process, port = _start_prism(spec, relay.url, log)
    except BaseException:
        relay.close()
        log.unlink(missing_ok=True)
        raise
    prism = _PooledPrism(process, port, relay, log)
    with _POOL_LOCK:
        if not _STARTED:
            atexit.register(stop_prisms)
        _STARTED.append(prism)
    return prism


def stop_prisms() -> None:
    """Stop every Prism this process started (at exit)."""
    with _POOL_LOCK:
        started, _STARTED[:] = list(_STARTED), []
        _IDLE.clear()
    for prism in started:
        prism.process.terminate()
        try:
            prism.process.wait(10)
        except subprocess.TimeoutExpired:
            prism.process.kill()
            prism.process.wait()
        prism.relay.close()
        prism.log.unlink(missing_ok=True)


@contextmanager
def prism_proxy(spec: Path, upstream: str, log: Path) -> Iterator[PrismProxy]:
    """``prism proxy SPEC UPSTREAM --errors`` on a free port, for this block:
    a Prism of this process's pool, pointed at ``upstream``; what it logged in
    the block is copied to ``log``."""
    if not PRISM.exists():
        raise RuntimeError(f"{PRISM} is missing: run .ci/run (it installs Prism with npm)")
    prism = _pooled(spec)
    prism.relay.point_at(upstream)
    proxy = PrismProxy(
        f"http://127.0.0.1:{prism.port}", prism.process, prism.log, prism.log.stat().st_size
    )
    try:
        yield proxy
    finally:
        prism.relay.point_at(None)
        log.write_bytes(proxy.logged())
        with _POOL_LOCK:
            if prism in _STARTED and prism.process.poll() is None:
                _IDLE.setdefault(spec, []).append(prism)
