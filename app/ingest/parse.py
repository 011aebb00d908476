"""One upload's payload -> one report: parse each file, fix paths, apply fixes, merge.

Each coverage file's files pass through :class:`_PayloadFiles` on their way
into the upload's report: placed by the repository's file list (the
"network", tried as written, then joined with the coverage file's directory
and with the report's ``<source>``s: ``app.coverage.network_paths``), or
without one under the coverage file's directory
(``app.coverage.paths.place_under_checkout``), stripped of the lines the
uploader says to ignore, then added to the report (where a path met twice
merges). The report is either a :class:`Report` (:func:`parse_payload`) or
the intermediate's writer
(:func:`payload_intermediate`, what the processor stores), which keeps only
the numbers: a streaming parser's files go from the bytes to the writer one
at a time, so a payload of a million lines is never held as objects.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace

from app.coverage import ParseLimits, Report, detect_format
from app.coverage.codec import IntermediateWriter
from app.coverage.model import FileCoverage, FileSink
from app.coverage.network_paths import NetworkPaths, Resolution
from app.coverage.parse import parse_into
from app.coverage.paths import clean, place_under_checkout
from app.coverage.skipped import SkippedRecords
from app.errors import MalformedPayload, ReportError
from app.ingest.payload import Fix, decode_payload
from app.runtime.gc_pause import gc_paused


@dataclass
class PayloadRead:
    """What parsing an upload tells besides its coverage, whichever form that takes."""

    formats: list[str]
    warnings: list[str] = field(default_factory=list)
    #: The uploader's names of the coverage files, in payload order.
    names: list[str] = field(default_factory=list)
    #: The bad records the parsers skipped (named with their coverage file).
    skipped: SkippedRecords = field(default_factory=SkippedRecords)


@dataclass(kw_only=True)
class ParsedUpload(PayloadRead):
    report: Report


@dataclass(kw_only=True)
class UploadIntermediate(PayloadRead):
    """A parsed upload as the processor stores it: its serialised form."""

    data: bytes


def drop_fixed_lines(coverage: FileCoverage, fix: Fix) -> None:
    """Drop the lines the uploader says to ignore (and all after ``eof``)."""
    drop = {ln for ln in coverage.lines if ln in fix.lines}
    if fix.eof is not None:
        drop |= {ln for ln in coverage.lines if ln > fix.eof}
    for ln in drop:
        coverage.lines.pop(ln, None)
        coverage.branches.pop(ln, None)


class _PayloadFiles:
    """One coverage file's way into the upload's report (a :class:`FileSink`
    in front of it): each path placed once (by the network, the coverage
    file's directory and the report's bases: :meth:`NetworkPaths.place`;
    without a network :func:`place_under_checkout`), fixes applied, lines
    counted for the payload's limit."""

    def __init__(
        self,
        sink: FileSink,
        network: NetworkPaths | None,
        resolved: dict[tuple[str, str, tuple[str, ...]], str],
        resolution: Resolution,
        fixes: dict[str, Fix],
        origin: str = "",
    ) -> None:
        self._sink, self._network, self._fixes = sink, network, fixes
        self._resolved, self._resolution = resolved, resolution
        #: The coverage file's directory, as the uploader names it.
        self._origin = origin
        self.records = 0
        #: This coverage file's warnings and skipped records (the caller names
        #: the file in them).
        self.warnings: list[str] = []
        self.skipped = SkippedRecords()

    def _place(self, path: str, bases: tuple[str, ...]) -> tuple[str, str]:
        network = self._network
        if network is None:
            return place_under_checkout(path, bases, self._origin), "listed"
        return network.place(path, bases, self._origin)

    def _target(self, path: str, bases: tuple[str, ...], *, note: bool = True) -> str:
        """Where ``path`` goes; ``note``: say an unplaced one in the upload's
        warnings (once: the answer is kept)."""
        key = (self._origin, path, bases)
        target = self._resolved.get(key)
        if target is None:
            target, how = self._place(path, bases)
            if not note:
                return target
            self._resolved[key] = target
            result = self._resolution
            if how == "ambiguous":
                result.ambiguous.append(path)
            elif how == "unknown":
                result.unknown.append(path)
            elif target != path:
                result.renamed[path] = target
        return target

    def add_file(self, path: str, fc: FileCoverage, bases: tuple[str, ...] = ()) -> None:
        self.records += len(fc.lines)
        target = self._target(path, bases)
        fix = self._fixes.get(target)
        if fix is not None:
            drop_fixed_lines(fc, fix)
        if fc.lines:  # an upload keeps no file without lines (``IntermediateWriter``)
            self._sink.add_file(target, fc)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._target(path, (), note=False) in self._sink

    def file_count(self) -> int:
        return self._sink.file_count()


def _read_payload(raw: bytes, limits: ParseLimits, sink: FileSink) -> PayloadRead:
    """Every coverage file of the payload into ``sink``: its formats, the
    warnings, and the uploader's names of the files.

    A file that does not parse fails the whole upload (``ReportError``
    naming the file): half an upload would silently lower the coverage.
    """
    payload = decode_payload(raw, limits.max_bytes)
    if not payload.files:
        raise MalformedPayload("the payload holds no coverage files")
    network = NetworkPaths(payload.network) if payload.network else None
    resolved: dict[tuple[str, str, tuple[str, ...]], str] = {}
    resolution = Resolution()
    formats, warnings, skipped = list[str](), list[str](), SkippedRecords()
    records = 0  # the line records of the files so far: the limit is the payload's
    for item in payload.files:
        left = replace(limits, max_lines=limits.max_lines - records)
        origin = posixpath.dirname(clean(item.name))
        files = _PayloadFiles(sink, network, resolved, resolution, payload.fixes, origin)
        try:
            fmt = parse_into(item.data, files, limits=left, fmt=detect_format(item.data))
        except ReportError as exc:
            raise ReportError(f"coverage file {item.name}: {exc}") from None
        records += files.records
        # a parser's warnings are the upload's, named by file
        warnings.extend(f"coverage file {item.name}: {w}" for w in files.warnings)
        skipped.extend(files.skipped, prefix=f"{item.name} ")
        formats.append(fmt)
    if network is not None:
        warnings.extend(resolution.warnings())
    return PayloadRead(formats, warnings, [item.name for item in payload.files], skipped)


def parse_payload(raw: bytes, limits: ParseLimits) -> ParsedUpload:
    """Every coverage file of the payload merged into one report."""
    report = Report()
    read = _read_payload(raw, limits, report)
    return ParsedUpload(read.formats, read.warnings, read.names, read.skipped, report=report)


def payload_intermediate(raw: bytes, limits: ParseLimits) -> UploadIntermediate:
    """:func:`parse_payload`'s report in its serialised form, written as it is
    parsed (see the module docstring)."""
    writer = IntermediateWriter()
    with gc_paused():  # a parse makes no cycles (app.runtime.gc_pause)
        read = _read_payload(raw, limits, writer)
    return UploadIntermediate(
        read.formats, read.warnings, read.names, read.skipped, data=writer.finish()
    )


def report_intermediate(raw: bytes, limits: ParseLimits, fmt: str) -> UploadIntermediate:
    """One report (not a payload) in its serialised form, written as it is parsed."""
    writer = IntermediateWriter()
    with gc_paused():  # a parse makes no cycles (app.runtime.gc_pause)
        parse_into(raw, writer, limits=limits, fmt=fmt)
    return UploadIntermediate([fmt], writer.warnings, [], writer.skipped, data=writer.finish())
