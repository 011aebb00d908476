"""Provider calls per upload: what one repository can spend of the rate limit
every repository shares.

    python benchmarks/provider_calls.py                         # this tree
    python benchmarks/provider_calls.py --baseline-tree ../old  # and another checkout's

Real ``covworker serve`` and one worker process (of this tree, and of
``--baseline-tree``'s when given), real Redis and PostgreSQL, the fake GitHub
behind Prism; uploads through codecov-cli's protocol
(tests/support/provider_calls.py). Two hostile inputs:

- uploads of SHAs GitHub does not have (``--made-up`` different SHAs, then
  ``--again`` more uploads of the first one): GitHub answers 422 "No commit
  found for SHA" or 404 "No commit found for the ref", as it does;
- a pull request's upload whose ``codecov.yml`` (about 21 kB) names 500 flags,
  each with a project status (502 statuses asked for).

Printed: the calls the fake received per upload, the status writes among
them, and how many such uploads spend GitHub's 5,000 calls an hour (the
credentials' limit every repository shares). With the budget, one
repository spends at most ``COVWORKER_PROVIDER_CALLS_PER_REPOSITORY_HOUR``
(1,000) of them whatever it uploads.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.support.fake_github import FakePull  # noqa: E402
from tests.support.provider_calls import feedback_stack, many_flags_yaml  # noqa: E402
from tests.support.services import delete_namespace, redis_test_url  # noqa: E402

REPO = "acme/noisy"
HOURLY_LIMIT = 5000
BASE, HEAD = "b" * 40, "c" * 40
DIFF = [("src/app.py", "modified", "@@ -4,0 +5,4 @@\n+a\n+b\n+c\n+d\n")]


def made_up(i: int) -> str:
    return f"{0xF00D0000 + i:08x}" + "f" * 32


def measure(
    tree: Path | None, made_up_shas: int, again: int, flag_uploads: int
) -> dict[str, float]:
    """Calls per upload of each input against ``tree``'s serve and worker."""
    namespace = f"bench-calls-{uuid.uuid4().hex[:8]}"
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            feedback_stack(Path(tmp), namespace, tree) as stack,
        ):
            fake = stack.fake
            fake.state.unknown_commits |= {made_up(i) for i in range(made_up_shas)}
            token = stack.add_repo(REPO)
            mark = stack.mark()
            for i in range(made_up_shas):
                stack.upload(REPO, token, made_up(i))
                stack.feedback_done(made_up(i), 1)
            different = len(stack.calls(REPO, mark))
            mark = stack.mark()
            for n in range(again):
                stack.upload(REPO, token, made_up(0))
                stack.feedback_done(made_up(0), 2 + n)
            same = len(stack.calls(REPO, mark))

            fake.add_pull(REPO, FakePull(7, BASE, "main", HEAD, "feature"))
            fake.add_diff(REPO, BASE, HEAD, DIFF)
            fake.add_file(REPO, HEAD, "codecov.yml", many_flags_yaml(500).encode())
            mark = stack.mark()
            for n in range(flag_uploads):
                stack.upload(REPO, token, HEAD, branch="feature", pull=7)
                stack.feedback_done(HEAD, 1 + n)
            flagged = stack.calls(REPO, mark)
            violations = stack.proxy.violations()
        if violations:
            raise SystemExit(f"Prism refused calls: {violations[:3]}")
    finally:
        delete_namespace(redis_test_url(), namespace)
    statuses = sum(1 for c in flagged if c.startswith("POST") and "/statuses/" in c)
    return {
        "made_up_new": different / made_up_shas,
        "made_up_again": same / again if again else 0.0,
        "flags_calls": len(flagged) / flag_uploads,
        "flags_statuses": statuses / flag_uploads,
    }


def row(label: str, per_upload: float) -> str:
    exhaust = f"{HOURLY_LIMIT / per_upload:,.0f}" if per_upload else "never"
    return f"| {label} | {per_upload:.1f} | {exhaust} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-tree", type=Path, help="another checkout, side by side")
    parser.add_argument("--made-up", type=int, default=5, help="uploads of different made-up SHAs")
    parser.add_argument("--again", type=int, default=3, help="more uploads of the first one")
    parser.add_argument("--flag-uploads", type=int, default=1, help="uploads with 500 flags")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline_tree:
        trees.insert(0, ("baseline", args.baseline_tree.resolve()))
    for name, tree in trees:
        found = measure(tree, args.made_up, args.again, args.flag_uploads)
        print(f"\n{name} ({tree or REPO_ROOT})\n")
        print(f"| input | calls per upload | uploads that spend {HOURLY_LIMIT:,} calls |")
        print("| --- | ---: | ---: |")
        print(row(f"made-up SHA, a new one each upload ({args.made_up})", found["made_up_new"]))
        print(row(f"made-up SHA, the same again ({args.again})", found["made_up_again"]))
        print(row("codecov.yml with 500 flags: all calls", found["flags_calls"]))
        print(row("codecov.yml with 500 flags: status writes", found["flags_statuses"]))


if __name__ == "__main__":
    main()
