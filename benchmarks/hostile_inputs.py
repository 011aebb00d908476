"""What hostile uploads cost the worker: peak memory and CPU against payload size.

    python benchmarks/hostile_inputs.py                          # reduced sizes
    python benchmarks/hostile_inputs.py --full                   # the sizes of the report
    python benchmarks/hostile_inputs.py --baseline-tree ../old   # another checkout, side by side
    python benchmarks/hostile_inputs.py --full --only JUnit      # one amplifier
    python benchmarks/hostile_inputs.py --only codecov.yml       # the amplifiers naming it
    python benchmarks/hostile_inputs.py --only comment           # the pull-request comment

Each case is a payload an attacker with an upload token can send, built at
growing sizes: network paths of many segments (every suffix of every path
used to be kept), many small zlib bombs in one payload (the inflate limit
used to apply per file), a gzip bomb as a plain report, a tiny Go profile
whose block spans millions of lines, deeply nested JSON and a legacy fix
line of thousands of digits (the last two used to crash the processor),
and a test-results payload of empty test cases (each three rows in the
database; the cap on cases used not to grow with the payload's size).
And what a repository's ``codecov.yml`` costs the worker's ``prepare``: an
alias bomb (the error once held ``repr()`` of the expanded value), nesting
thousands deep (``RecursionError``, retried), and a catastrophic ``ignore``
regex matched against a path of L characters (backtracking doubles per
character): parsed with ``parse_codecov_yaml``, its errors joined as the
comment shows them, and one path matched against its ``ignore``.
And what a commit's failed tests cost ``prepare``'s comment: a JUnit file of
F failures with 1.5 kB messages (45 make the comment longer than GitHub's
65,536 characters, which it refuses with 422), read with ``parse_junit``,
then its test section and the comment rendered (``tests_section``,
``render_comment`` on ``tests/support/pullcomment.py``'s small pull
request) as they were before the cut (``max_chars`` unbounded: the whole
rendering) and as they are (cut to fit); the outcome is the comment's
length in characters (rendered once before the measured rendering: the first
use of the code costs more than the work).

Each payload is processed in a fresh Python process the way
``upload_processor`` does it (``app.pipeline.processor``: limits scaled to the
stored bytes, ``parse_payload`` or ``detect_format`` + ``parse_report``, then
the intermediate's ``to_bytes``), with nothing else: no Redis, no database.
Reported: the bytes stored (N), how the upload ends (processed, or the error
it gets), the peak RSS above the process's RSS just before the work (the
peak is reset there through ``/proc/self/clear_refs``; the ``VmHWM`` after
it minus the ``VmRSS`` before), the CPU time (user + system), and whether the
memory is within the target of 64 MiB + 200 x N.

``--baseline-tree`` runs the same payloads against the ``app`` package of
another checkout (the previous main, say) in the same run, side by side,
under an address-space limit of ``--baseline-max-gib`` (a case that hits it
shows ``MemoryError``).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024

#: Run in the child: process one stored upload as upload_processor does.
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.setrecursionlimit(1000)
from app.coverage import ParseLimits, detect_format, parse_report
from app.ingest.parse import parse_payload
from app.settings import Settings
from app.coverage import codec

raw = open(sys.argv[2], "rb").read()
payload_format = sys.argv[3] or None

def status_kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

def reset_peak():  # VmHWM back to VmRSS (Linux 4.0+)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

limits = ParseLimits(max_bytes=Settings.model_fields["max_upload_bytes"].default)
if payload_format and payload_format.startswith("codecov.yml"):
    from app.pullrequests.config import parse_codecov_yaml
    path = "a" * int(payload_format.partition(":")[2] or 0) + "b"
if payload_format and payload_format.startswith("comment"):  # the commit's failures, as stored
    from app.testresults.comment import tests_section
    from app.testresults.junit import parse_junit
    from app.testresults.summary import CommitTests, Failure
    from tests.support.pullcomment import rendered
    failures = [
        Failure(name=c.name, suite=c.suite, message=c.message, flaky=False, duration=c.duration)
        for c in parse_junit(raw)
        if c.outcome == "failed"
    ]
    tests = CommitTests(uploads=1, passed=1, failed=len(failures), failures=failures)
    uncut = {"max_chars": 10**9} if payload_format == "comment:uncut" else {}  # as before the cut
    rendered(extra_sections=[tests_section(tests)], **uncut)  # once unmeasured: first-use costs
reset_peak()
before = status_kib("VmRSS")
started = time.process_time()
try:
    if payload_format and payload_format.startswith("codecov.yml"):
        config = parse_codecov_yaml(raw.decode())
        shown = "\n".join(str(e) for e in config.errors)  # as the comment lists them
        config.is_ignored(path)
        first = shown.splitlines()[0][:60] if shown else ""
        outcome = f"{len(config.errors)} error(s), {len(shown):,} chars: {first}"
    elif payload_format and payload_format.startswith("comment"):
        section = tests_section(tests)
        section_s = time.process_time() - started  # the rest: render_comment, its cut included
        body = rendered(extra_sections=[section], **uncut)
        over = "over" if len(body) > 65_536 else "within"
        cut = ", cut with the note" if ":scissors:" in body else ""
        comment_ms = (time.process_time() - started - section_s) * 1000
        outcome = (
            f"a comment of {len(body):,} chars ({over} GitHub's 65,536){cut}; "
            f"render_comment {comment_ms:.1f} ms of the CPU"
        )
    elif payload_format == "test_results":  # as store_test_results parses, before its rows
        from app.testresults import junit, store
        scaled = getattr(limits, "for_input", None)
        limits = scaled(len(raw)) if scaled else limits
        cap = getattr(junit, "max_test_cases", lambda n: junit.MAX_TEST_CASES)(len(raw))
        files = store.decode_test_results_payload(raw, limits.max_bytes)
        try:
            found = store.parse_files(files, cap)
        except TypeError:  # a tree whose cap does not scale
            found = store.parse_files(files)
        outcome = f"processed: {len(found):,} test cases, {3 * len(found):,} rows to write"
    else:
        scaled = getattr(limits, "for_input", None)
        limits = scaled(len(raw)) if scaled else limits
        if payload_format:
            report = parse_payload(raw, limits).report
        else:
            report = parse_report(raw, limits=limits, fmt=detect_format(raw))
        codec.dump(report)
        outcome = "processed"
except Exception as exc:
    outcome = f"error: {type(exc).__name__}: {exc}"
cpu = time.process_time() - started
peak = status_kib("VmHWM")
print(json.dumps({"outcome": outcome, "cpu_s": cpu, "peak_kib": peak - before}))
"""


@dataclass(frozen=True)
class Case:
    amplifier: str
    parameter: str
    raw: bytes
    payload_format: str | None


def v1(files: list[tuple[str, bytes]], network: list[str] | None = None) -> bytes:
    return json.dumps(
        {
            "coverage_files": [
                {
                    "filename": name,
                    "format": "base64+compressed",
                    "data": base64.b64encode(zlib.compress(data, 9)).decode(),
                }
                for name, data in files
            ],
            "network_files": network or [],
        }
    ).encode()


LCOV = b"SF:a.py\nDA:1,1\nend_of_record\n"


def network_paths(segments: int) -> Case:
    deep = ["/".join(["d"] * segments + [f"f{i}.py"]) for i in range(4)]
    lcov = b"SF:/ci/" + deep[1].encode() + b"\nDA:1,1\nend_of_record\n"
    raw = gzip.compress(v1([("lcov.info", lcov)], deep), 9)
    return Case("network paths (4 paths)", f"{segments:,} segments", raw, "v1")


def many_bombs(entries: int) -> Case:
    raw = v1([(f"f{i}.info", b"\n" * (20 * MIB)) for i in range(entries)])
    return Case("zlib bombs in one v1 payload (20 MiB each)", f"{entries} entries", raw, "v1")


def gzip_bomb(mib: int) -> Case:
    raw = gzip.compress(LCOV + b"\n" * (mib * MIB), 9)
    return Case("gzip bomb as a plain report", f"{mib:,} MiB unpacked", raw, None)


def go_range(last_line: int) -> Case:
    raw = f"mode: set\ngithub.com/acme/app/main.go:1.1,{last_line}.2 1 1\n".encode()
    return Case("Go block spanning lines 1..L", f"L = {last_line:,}", raw, None)


def deep_json(depth: int) -> Case:
    raw = b'{"coverage_files": ' + b"[" * depth + b"]" * depth + b"}"
    return Case("nested JSON (v1)", f"depth {depth:,}", raw, "v1")


def legacy_digits(digits: int) -> Case:
    raw = b"# path=fixes\na.py:" + b"9" * digits + b"\n<<<<<< EOF\n# path=a.info\n" + LCOV
    return Case("legacy fix line of D digits", f"D = {digits:,}", raw + b"<<<<<< EOF\n", "legacy")


def empty_test_cases(count: int) -> Case:
    """A gzipped codecov-cli test-results payload of ``count`` empty ``<testcase/>``:
    each becomes three rows (the test, its run, its day's counts)."""
    doc = b"<testsuite>" + b"".join(b'<testcase name="t%d"/>' % i for i in range(count))
    raw = gzip.compress(v1([("junit.xml", doc + b"</testsuite>")]).replace(
        b'"coverage_files"', b'"test_results_files"'
    ), 9)  # fmt: skip
    return Case("JUnit of empty test cases", f"{count:,} cases", raw, "test_results")


def yaml_alias_bomb(levels: int) -> Case:
    lines = ["l0: &l0 [" + ",".join(["lol"] * 9) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    raw = ("\n".join(lines) + f"\nfixes: [*l{levels - 1}]\n").encode()
    return Case(
        "codecov.yml alias bomb (9 aliases a level)", f"9^{levels} values", raw, "codecov.yml"
    )


def yaml_nesting(depth: int) -> Case:
    raw = b"coverage: " + b"[" * depth + b"]" * depth + b"\n"
    return Case("codecov.yml nested D deep", f"D = {depth:,}", raw, "codecov.yml")


def yaml_regex(length: int) -> Case:
    raw = b"ignore: ['^(a+)+$']\n"
    return Case(
        "codecov.yml ignore ^(a+)+$ on a path", f"L = {length}", raw, f"codecov.yml:{length}"
    )


def failed_tests(count: int, uncut: bool) -> Case:
    """A JUnit file of ``count`` tests failing with a 1,500-character message, as
    pytest writes them (``tests/e2e/test_long_pull_comment.py``'s failures)."""
    doc = b'<testsuites><testsuite name="pytest">' + b"".join(
        b'<testcase classname="failing_test" name="test_long_failure[%d]" time="0.001">'
        b'<failure message="AssertionError">AssertionError: case %d: %s</failure></testcase>'
        % (i, i, b"x" * 1500)
        for i in range(count)
    )
    when = "whole, as before the cut" if uncut else "cut to fit"
    return Case(
        f"comment on F failed tests, 1.5 kB messages, {when}",
        f"F = {count}",
        doc + b"</testsuite></testsuites>",
        "comment:uncut" if uncut else "comment",
    )


def cases(full: bool) -> list[Case]:
    made = [network_paths(s) for s in ((1_000, 4_000, 16_000, 64_000) if full else (1_000, 4_000))]
    made += [many_bombs(n) for n in ((1, 10, 40, 160) if full else (1, 10))]
    made += [gzip_bomb(m) for m in ((16, 256, 1024) if full else (16, 256))]
    made += [
        go_range(n)
        for n in ((10_000, 190_000, 1_000_000, 4_000_000) if full else (10_000, 190_000, 1_000_000))
    ]
    made += [deep_json(d) for d in ((100_000, 1_000_000) if full else (100_000,))]
    made += [legacy_digits(d) for d in (5_000, 100_000)]
    made += [yaml_alias_bomb(n) for n in ((6, 7, 8, 9) if full else (6, 8))]
    made += [yaml_nesting(d) for d in (1_000, 50_000)]
    made += [yaml_regex(n) for n in ((16, 20, 24, 26) if full else (16, 22))]
    made += [empty_test_cases(n) for n in ((60_000, 257_000, 1_000_000) if full else (257_000,))]
    made += [failed_tests(n, uncut) for uncut in (True, False) for n in (45, 450)]
    return made


def measure(case: Case, tree: Path, path: Path, max_gib: float | None) -> dict[str, object]:
    path.write_bytes(case.raw)

    def limit() -> None:
        if max_gib is not None:
            import resource

            cap = int(max_gib * 1024**3)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), str(path), case.payload_format or ""],
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=limit,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"outcome": f"crashed ({done.returncode}): {last[:120]}", "cpu_s": None}
    return json.loads(done.stdout.strip().splitlines()[-1])


def short(outcome: str) -> str:
    return outcome if len(outcome) <= 110 else outcome[:107] + "..."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the larger sizes")
    parser.add_argument("--baseline-tree", type=Path, help="another checkout, run side by side")
    parser.add_argument("--baseline-max-gib", type=float, default=3.0)
    parser.add_argument("--only", default="", help="only the amplifiers naming this (codecov.yml)")
    args = parser.parse_args()
    trees = [("this tree", REPO, None)]
    if args.baseline_tree:
        trees.append(("baseline", args.baseline_tree.resolve(), args.baseline_max_gib))
    print(f"python {platform.python_version()}, load average {os.getloadavg()}")
    print(
        "| amplifier | input | tree | stored bytes N | outcome | peak RSS over start | CPU "
        "| target 64 MiB + 200 N | within |"
    )
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for case in (c for c in cases(args.full) if args.only in c.amplifier):
            n = len(case.raw)
            target = 64 * MIB + 200 * n
            for name, tree, max_gib in trees:
                got = measure(case, tree, Path(tmp) / "payload", max_gib)
                peak = got.get("peak_kib")
                peak_b = int(peak) * 1024 if isinstance(peak, int) else None
                shown = f"{peak_b / MIB:.1f} MiB" if peak_b is not None else "-"
                cpu = f"{got['cpu_s']:.3f} s" if got.get("cpu_s") is not None else "-"
                within = "-" if peak_b is None else ("yes" if peak_b <= target else "NO")
                print(
                    f"| {case.amplifier} | {case.parameter} | {name} | {n:,} "
                    f"| {short(str(got['outcome']))} | {shown} | {cpu} "
                    f"| {target / MIB:.1f} MiB | {within} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
