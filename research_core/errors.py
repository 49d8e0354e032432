"""Typed run failures: each is reported to the user as one clear line.

Model mistakes never raise these (they go back to the model or to a fallback);
bugs are not caught at all.
"""


class RunError(Exception):
    """A run cannot go on for a reason the user can act on."""


class InvalidQuestion(RunError):
    """The question is empty, blank or too long."""


class CorpusError(RunError):
    """The corpus folder is missing or one of its documents is malformed."""


class ModelUnavailable(RunError):
    """A model tier cannot be reached or loaded."""


class SearchUnavailable(RunError):
    """Every search backend failed for a query."""


class SettingsError(RunError):
    """A setting in the environment has a value that cannot be used."""


class RunNotFound(RunError):
    """No stored run has the given id."""


class StoreUnavailable(RunError):
    """The database cannot be opened or written."""
