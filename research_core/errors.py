"""Typed failures that a person can act on; each is reported as one clear line.

The three error lanes: a model mistake (unparseable or invalid output) goes back to the model
or to a fallback and never raises one of these; a failure that stops a run or a command raises
one of these and the entry point reports it (the CLI: `redsearch: error: …`, exit 2; a job:
"Research failed: …" in its thread); a bug is not caught at all.

    RunError                    a run or a command cannot go on
    ├── InvalidQuestion         the question is empty, blank or too long
    ├── CorpusError             the corpus folder is missing or a document is malformed
    ├── SuiteError              an evaluation suite is missing or its tasks are malformed
    ├── ModelUnavailable        a model tier cannot be reached or loaded
    ├── SearchUnavailable       every search backend failed for a query
    ├── SettingsError           a setting has a value that cannot be used
    ├── RunNotFound             no stored run has the given id
    ├── StoreUnavailable        the database cannot be opened or written
    └── ServiceUnavailable      a service the command needs cannot be reached or started
        ├── RedisUnavailable    no Redis answers, or the embedded one cannot start
        ├── PortBusy            a port to serve on is taken
        └── WorkerFailed        a supervised worker process could not start
"""


class RunError(Exception):
    """A run or a command cannot go on for a reason the user can act on."""


class InvalidQuestion(RunError):
    """The question is empty, blank or too long."""


class CorpusError(RunError):
    """The corpus folder is missing or one of its documents is malformed."""


class SuiteError(RunError):
    """The suite folder is missing or its tasks file is malformed."""


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


class ServiceUnavailable(RunError):
    """A service the command needs cannot be reached or started."""


class RedisUnavailable(ServiceUnavailable):
    """No Redis answers, or the embedded one cannot start (the message is one line)."""


class PortBusy(ServiceUnavailable):
    """A port to serve on is taken."""


class WorkerFailed(ServiceUnavailable):
    """A supervised worker process could not start (its own error line is above)."""
