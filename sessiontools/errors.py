"""Errors that cross layer boundaries. The CLI turns each into a one-line message and an exit code."""

from __future__ import annotations


class SessionToolsError(Exception):
    """Base class of every error sessiontools reports to a user."""

    exit_code = 3


class InputError(SessionToolsError):
    """An input cannot be read or holds no session at all (exit 3)."""

    exit_code = 3


class NothingToReplay(InputError):
    """A readable session with no model request (a rollout closed before its first response): there is
    nothing to replay. `replay` leaves the file out with a one-line note; it is not an unreadable input."""


class ModelNotInCatalogue(InputError):
    """A session whose model has no known context window (the catalogue, models.json files and
    --models lack it) and none is given: `model` is its `provider/model`. `replay` leaves the file out
    (`replay.run_document.MissingModel`) and says once per model which files."""

    def __init__(self, message: str, model: str) -> None:
        super().__init__(message)
        self.model = model

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # picklable (a --jobs worker's error)
        return type(self), (str(self), self.model)


class OutputError(SessionToolsError):
    """An output file could not be written; the previous file, if any, is left as it was (exit 3)."""

    exit_code = 3


class UsageError(SessionToolsError):
    """The command line asks for something that does not make sense (exit 2)."""

    exit_code = 2


class NoSuchEntry(UsageError):
    """An entry id or `#N` index named on the command line is not in the session."""



#: The exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
