"""Cutting Markdown to fit a provider's limit on a comment's length.

GitHub refuses a comment body over 65,536 characters (422, "Body is too
long"), and a refused comment means the pull request gets no comment at
all, its coverage included. So a comment that would be longer is cut:
the test section's failures first (:func:`app.pullrequests.comment.render_comment`),
then, if still too long, the comment's end. A cut is made at the end of a
line; the code fences and ``<details>`` blocks still open there are
closed, so the cut does not swallow what follows; a note says the comment
was cut and links to the commit's page, which lists everything.
GitLab's limit (1,000,000 characters) is larger: one limit serves both.

Pure: no I/O; one pass over the lines, so the cost is linear in the text.
"""

from __future__ import annotations

from dataclasses import dataclass

#: GitHub's most characters in an issue or pull-request comment.
MAX_COMMENT_CHARS = 65_536
_CLOSE_DETAILS = "</details>"


def cut_note(url: str) -> str:
    return (
        f":scissors: Cut to fit the provider's {MAX_COMMENT_CHARS:,} characters: "
        f"[the commit's page]({url}) lists everything."
    )


def _fence(line: str) -> tuple[str, str, str] | None:
    """``(quote markers, fence run, rest)`` of a code-fence line, else None."""
    body = line.lstrip()
    quote = ""
    while body.startswith(">"):
        quote += ">"
        body = body[1:].lstrip()
    if body[:3] not in ("```", "~~~"):
        return None
    run = len(body) - len(body.lstrip(body[0]))
    return quote, body[:run], body[run:]


@dataclass(slots=True)
class _Open:
    """What is open after a line: a code fence (its run, its quote) and ``<details>`` blocks."""

    fence: str | None = None
    quote: str = ""
    details: int = 0

    def read(self, line: str) -> None:
        found = _fence(line)
        if self.fence is None:
            if found is not None:
                self.quote, self.fence = found[0], found[1]
                return
            lowered = line.lower()
            self.details = max(
                0, self.details + lowered.count("<details") - lowered.count("</details>")
            )
        elif (
            found is not None
            and found[1][0] == self.fence[0]
            and len(found[1]) >= len(self.fence)
            and not found[2].strip()
        ):
            self.fence = None

    def _fence_closer(self) -> str:
        return f"{self.quote} {self.fence}".strip() if self.fence else ""

    def closers_length(self) -> int:
        """``len(self.closers())``, without making it (one line at a time: linear)."""
        lines = [len(self._fence_closer())] if self.fence else []
        total = sum(lines) + len(_CLOSE_DETAILS) * self.details
        return total + max(0, len(lines) + self.details - 1)

    def closers(self) -> str:
        lines = [self._fence_closer()] if self.fence else []
        return "\n".join(lines + [_CLOSE_DETAILS] * self.details)


def fit_markdown(text: str, limit: int, url: str) -> str:
    """``text`` if it has at most ``limit`` characters; else its first lines
    that fit with their open fences and ``<details>`` closed, then the note
    (:func:`cut_note`); only the note if no line fits."""
    if len(text) <= limit:
        return text
    note = cut_note(url)
    state, kept = _Open(), _Open()
    cut = 0
    end = -1
    for line in text.split("\n"):
        end += 1 + len(line)  # where the line ends in text
        state.read(line)
        closing = state.closers_length()
        size = end + (1 + closing if closing else 0) + 2 + len(note)
        if size > limit:
            break
        cut = end
        kept.fence, kept.quote, kept.details = state.fence, state.quote, state.details
    if cut == 0:
        return note[:limit]
    closers = kept.closers()
    head = text[:cut] + ("\n" + closers if closers else "")
    return f"{head}\n\n{note}"
