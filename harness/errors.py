"""Errors a user can act on.

Every error that reaches the CLI as a `HarnessError` is printed as one line, without a
traceback, and the process exits non-zero. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A problem with the user's input or environment, explained in one line."""


class ConfigError(HarnessError):
    """Bad experiment file, questions file, corpus or command-line override.

    The message names the file, the field and what was expected.
    """

    def __init__(self, where: str, field: str, expected: str) -> None:
        self.where = where
        self.field = field
        self.expected = expected
        location = f"{where}: " if where else ""
        field_part = f"{field}: " if field else ""
        super().__init__(f"{location}{field_part}{expected}")


class JudgeUnavailable(HarnessError):
    """The judge endpoint cannot be reached or refuses us (auth, unknown model).

    Stops a run: grinding on would record every verdict as an error.
    """


class ModelFileError(HarnessError):
    """A local model file is missing or its hash does not match."""


def os_error_message(exc: OSError) -> str:
    """An OSError as one line naming the file: `<file>: <reason>` (e.g. a read-only
    results folder or a full disk), without Python's `[Errno N]` prefix."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{' -> '.join(names)}: {reason}" if names else reason
