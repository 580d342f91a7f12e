"""Errors raised by ingest readers."""

from __future__ import annotations

from pathlib import Path


class IngestError(Exception):
    """A source that cannot be read at all.

    The message names the file, the line or row when known, and the problem, so that the asset
    that failed shows the user where to look.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
    ) -> None:
        self.problem = problem
        self.file = str(file) if file is not None else None
        self.line = line
        where = ""
        if self.file is not None:
            where = self.file
            if line is not None:
                where += f", line {line}"
            where += ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(f"{where}{problem}")


class SourceUnavailable(IngestError):
    """The source's location could not be reached (a store that keeps answering 5xx or
    throttling after every retry, a refused connection, denied access, missing credentials):
    nothing about its data is known, so what it landed before stays as it was.

    `attempts` is how many times the last request was tried; the message names the location
    and the last error."""

    def __init__(self, problem: str, *, attempts: int | None = None) -> None:
        self.attempts = attempts
        super().__init__(problem)


class NoFilesMatch(SourceUnavailable):
    """The source's location matches no file at all (a wrong path, an unmounted share): like an
    unreachable store, nothing about its data is known, so what it landed before stays, the
    days are owed and the other sources are built and published."""
