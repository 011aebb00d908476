"""Synthetic coverage reports, shaped like a CI matrix's (demo and benchmarks).

Job ``i`` of a matrix covers the same source files with its own hit
pattern, as different interpreter versions or test shards do. Reports are
written in the real formats and go through the real parsers.
"""

from __future__ import annotations

import random

DEFAULT_FILES = 20
DEFAULT_LINES = 60


def job_hits(
    job: int, files: int = DEFAULT_FILES, lines: int = DEFAULT_LINES
) -> dict[str, dict[int, int]]:
    """The coverage job ``job`` reports: file -> line -> hits (deterministic)."""
    rng = random.Random(job)
    return {
        f"src/pkg/module_{f:03d}.py": {
            ln: 0 if ln % 9 == 0 else rng.choice((0, 0, 1, 1, 2, 5)) for ln in range(1, lines + 1)
        }
        for f in range(files)
    }


def lcov(hits: dict[str, dict[int, int]]) -> bytes:
    out = ["TN:"]
    for path, lines in hits.items():
        out.append(f"SF:{path}")
        out.extend(f"DA:{ln},{n}" for ln, n in lines.items())
        out.append(f"LF:{len(lines)}")
        out.append(f"LH:{sum(1 for n in lines.values() if n)}")
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


def cobertura(hits: dict[str, dict[int, int]]) -> bytes:
    out = [
        '<?xml version="1.0" ?>',
        '<coverage version="7.4" line-rate="0">',
        "<packages>",
        '<package name="pkg">',
        "<classes>",
    ]
    for path, lines in hits.items():
        name = path.rsplit("/", 1)[-1]
        out.append(f'<class name="{name}" filename="{path}"><lines>')
        out.extend(f'<line number="{ln}" hits="{n}"/>' for ln, n in lines.items())
        out.append("</lines></class>")
    out.append("</classes></package></packages></coverage>")
    return "\n".join(out).encode()


def ci_matrix(
    uploads: int, files: int = DEFAULT_FILES, lines: int = DEFAULT_LINES, *, first_job: int = 0
) -> list[tuple[str, bytes]]:
    """``uploads`` reports of jobs ``first_job``..., alternating LCOV and Cobertura."""
    reports = []
    for job in range(first_job, first_job + uploads):
        hits = job_hits(job, files, lines)
        if job % 2:
            reports.append((f"job-{job}.xml", cobertura(hits)))
        else:
            reports.append((f"job-{job}.lcov", lcov(hits)))
    return reports


def monorepo_lcov(job: int, files: int, lines: int, *, branch_every: int = 10) -> bytes:
    """One job's LCOV report of a monorepo: ``files`` files of ``lines`` lines,
    two branches (``BRDA``) on every ``branch_every``-th line; deterministic.

    Written directly (not through :func:`job_hits`) so a 1,000,000-line
    report takes about a second to generate, not tens.
    """
    rng = random.Random(job)
    pattern = [rng.choice((0, 0, 1, 1, 2, 5)) for _ in range(997)]  # prime: no file repeats
    out = ["TN:"]
    k = job
    for f in range(files):
        out.append(f"SF:src/svc_{f // 500:03d}/pkg/module_{f:05d}.py")
        for ln in range(1, lines + 1):
            n = 0 if ln % 9 == 0 else pattern[k % 997]
            k += 1
            out.append(f"DA:{ln},{n}")
            if branch_every and ln % branch_every == 0:
                taken = "-" if n == 0 else str(n)
                out.append(f"BRDA:{ln},0,0,{taken}")
                out.append(f"BRDA:{ln},0,1,{'-' if n == 0 else (k + job) % 2}")
        out.append(f"LF:{lines}")
        out.append("end_of_record")
    return ("\n".join(out) + "\n").encode()


def summed_line_hits(jobs: list[dict[str, dict[int, int]]]) -> dict[tuple[str, int], int]:
    """The hits of ``jobs`` summed per (file, line), independently of the model."""
    merged: dict[tuple[str, int], int] = {}
    for job in jobs:
        for path, lines in job.items():
            for ln, n in lines.items():
                merged[(path, ln)] = merged.get((path, ln), 0) + n
    return merged


def expected_totals(jobs: list[dict[str, dict[int, int]]]) -> dict[str, int]:
    """Line totals of merging ``jobs``, computed independently of the model."""
    merged = summed_line_hits(jobs)
    hits = sum(1 for n in merged.values() if n)
    return {
        "files": len({path for path, _ in merged}),
        "lines": len(merged),
        "hits": hits,
        "misses": len(merged) - hits,
    }
