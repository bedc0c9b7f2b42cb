"""User-facing errors.

Every mistake a user can make (a bad config key, a malformed data file, a missing checkpoint) raises a
subclass of :class:`UserError`. The CLI prints its message on one line and exits with status 2, without a
traceback; library users can catch it. Messages name the file, line or key and say what was expected.

A run that fails through no mistake in its input — its loss turned non-finite, the disk filled up, memory ran
out — raises :class:`RunFailure` (the CLI: one line, exit status 1); what it wrote before stays usable.
"""


class UserError(Exception):
    """A mistake in the user's input; the message is shown to the user as is."""


class ConfigError(UserError, ValueError):
    """An unknown or invalid configuration key or value (also a ValueError, what Python code expects of an
    invalid argument: ``model.generate(top_p=2)`` raises it)."""


class DataError(UserError):
    """Malformed input data; the message names the file and line (or record)."""


class CheckpointError(UserError):
    """A checkpoint directory that is missing, incomplete or of the wrong kind."""


class RunFailure(Exception):
    """A run that cannot go on (a non-finite loss, a full disk, too little memory); the message says what failed,
    where, and what is kept."""
