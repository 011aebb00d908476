"""The workload a sustained-load run sends: CI matrices of realistic sizes.

A commit has a matrix of 1 to 200 uploads (``MATRIX``); each upload is a
report of one of the eleven formats covworker reads, 10 KB to 10 MB raw
(``SIZES``), written by the writers the property tests check
(``tests.support.writers``); 10 % of uploads are JUnit test results; a share
of commits is a pull request's head, with feedback through the fake GitHub.
Payloads are made once, before the clock starts, as codecov-cli's v1 PUT
bodies (``base64+compressed``), and written to a directory the Locust
process reads (``locustfile.py``).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.parse_throughput import synthetic
from tests.support.payloads import packed, v1
from tests.support.testresults import junit
from tests.support.testresults import payload as junit_payload
from tests.support.writers import WRITERS

#: Uploads per commit, and how often (weights): most commits are small
#: matrices, a few are the 200-job matrices covworker is built for.
MATRIX: tuple[tuple[int, float], ...] = (
    (1, 0.30),
    (4, 0.25),
    (12, 0.20),
    (40, 0.15),
    (100, 0.07),
    (200, 0.03),
)
#: Raw report sizes (bytes) and how often.
SIZES: tuple[tuple[int, float], ...] = (
    (10_000, 0.55),
    (100_000, 0.30),
    (1_000_000, 0.13),
    (10_000_000, 0.02),
)
#: Share of uploads that are JUnit test results, and of commits that are a pull's head.
TEST_RESULTS_SHARE = 0.10
PULL_SHARE = 0.30


@dataclass(frozen=True)
class Payload:
    """One PUT body on disk and what it holds."""

    path: str
    kind: str  # "coverage" or "test_results"
    report_format: str
    raw_bytes: int  # the report's size before codecov-cli compresses it
    body_bytes: int
    lines: int
    weight: float


@dataclass
class Mix:
    """What a run sends, as the Locust process reads it (``mix.json``)."""

    payloads: list[Payload]
    matrix: tuple[tuple[int, float], ...] = MATRIX
    test_results_share: float = TEST_RESULTS_SHARE
    pull_share: float = PULL_SHARE
    #: Files every report names (the uploader's ``network_files``).
    paths: list[str] = field(default_factory=list)

    def mean_uploads_per_commit(self) -> float:
        return sum(n * w for n, w in self.matrix) / sum(w for _, w in self.matrix)

    def mean_raw_bytes(self) -> float:
        """An upload's mean raw size: coverage and test results in their shares."""
        mean = 0.0
        for kind, share in (
            ("coverage", 1 - self.test_results_share),
            ("test_results", self.test_results_share),
        ):
            of_kind = [p for p in self.payloads if p.kind == kind]
            total = sum(p.weight for p in of_kind)
            if total:
                mean += share * sum(p.raw_bytes * p.weight for p in of_kind) / total
        return mean

    def save(self, path: Path) -> None:
        doc = asdict(self)
        path.write_text(json.dumps(doc))

    @classmethod
    def load(cls, path: Path) -> Mix:
        doc = json.loads(path.read_text())
        doc["payloads"] = [Payload(**p) for p in doc["payloads"]]
        doc["matrix"] = tuple(tuple(m) for m in doc["matrix"])
        return cls(**doc)


def _bytes_per_line(fmt: str) -> float:
    sample = WRITERS[fmt](synthetic(2_000, seed=7))
    return len(sample) / 2_000


def make_mix(
    directory: Path,
    *,
    sizes: tuple[tuple[int, float], ...] = SIZES,
    matrix: tuple[tuple[int, float], ...] = MATRIX,
    formats: tuple[str, ...] = tuple(WRITERS),
    variants: int = 2,
    test_results_share: float = TEST_RESULTS_SHARE,
    pull_share: float = PULL_SHARE,
) -> Mix:
    """Write every payload of the mix to ``directory`` and describe them."""
    directory.mkdir(parents=True, exist_ok=True)
    payloads: list[Payload] = []
    paths: set[str] = set()
    size_total = sum(w for _, w in sizes)
    for fmt in formats:
        per_line = _bytes_per_line(fmt)
        for size, weight in sizes:
            lines = max(50, int(size / per_line))
            for variant in range(variants):
                report = synthetic(lines, seed=1000 * variant + size % 997)
                paths.update(report.files)
                raw = WRITERS[fmt](report)
                body = v1(
                    [{"filename": f"coverage.{fmt}", "format": "base64+compressed",
                      "data": packed(raw), "labels": ""}],
                    network_files=sorted(report.files),
                )  # fmt: skip
                path = directory / f"{fmt}-{size}-{variant}.json"
                path.write_bytes(body)
                share = weight / size_total / len(formats) / variants
                payloads.append(
                    Payload(str(path), "coverage", fmt, len(raw), len(body), lines, share)
                )
    rng = random.Random(5)
    for variant in range(variants):
        cases = [
            (f"test_{i}", rng.choice(("passed",) * 18 + ("failed", "skipped"))) for i in range(400)
        ]
        raw = junit(*cases, suite=f"tests.test_mod{variant}")
        path = directory / f"junit-{variant}.json"
        body = junit_payload(raw)
        path.write_bytes(body)
        payloads.append(
            Payload(str(path), "test_results", "junit", len(raw), len(body), 400, 1 / variants)
        )
    return Mix(payloads, matrix, test_results_share, pull_share, sorted(paths))
