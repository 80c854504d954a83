"""suanli's log: the standard :mod:`logging` module under the ``suanli`` logger.

Modules log with ``logging.getLogger(__name__)`` (``suanli.live.devices``, ...). As a library
suanli prints nothing of its own accord: the command line calls :func:`configure`, which shows
the records at the level ``--debug`` or ``SUANLI_LOG`` (``debug``, ``info``, ``warning``,
``error``) asks for on stderr, one short line each, and hides them otherwise.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

#: The package's top logger: every module's logger is a child of it.
LOGGER_NAME = "suanli"
#: The environment variable naming the level.
LOG_ENV = "SUANLI_LOG"
#: The levels SUANLI_LOG accepts.
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
#: One short line per record: ``DEBUG suanli.live.devices: nvmlDeviceGetPowerUsage failed``.
FORMAT = "%(levelname)s %(name)s: %(message)s"


def level_from_environment(environ: Mapping[str, str] | None = None) -> int | None:
    """The level ``SUANLI_LOG`` names (``None`` when unset or empty).

    Raises ``ValueError`` with one sentence for a value that is not a level.
    """
    from suanli.i18n import N_

    env = os.environ if environ is None else environ
    value = env.get(LOG_ENV, "").strip()
    if not value:
        return None
    level = LEVELS.get(value.lower())
    if level is None:
        raise ValueError(
            N_(
                "SUANLI_LOG={value!r} is not a log level; use debug, info, warning or error, "
                "or unset it"
            ).format(value=value)
        )
    return level


class StderrHandler(logging.Handler):
    """Writes each record to the ``sys.stderr`` of the moment (so a test capturing stderr, or
    click's runner, sees it), like logging's own last-resort handler."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write one formatted line."""
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging never breaks the command it describes
            self.handleError(record)


def configure(level: int | None) -> logging.Logger:
    """Show ``suanli`` records at ``level`` and above on stderr (``None``: show none).

    Calling it again replaces the previous setting (no handler is added twice).
    """
    logger = logging.getLogger(LOGGER_NAME)
    # A logging.config call elsewhere in the process (a server's dictConfig with
    # disable_existing_loggers) may have disabled loggers that existed then: ours stay on.
    for name, existing in logging.Logger.manager.loggerDict.items():
        if (name == LOGGER_NAME or name.startswith(LOGGER_NAME + ".")) and isinstance(
            existing, logging.Logger
        ):
            existing.disabled = False
    for handler in list(logger.handlers):
        if isinstance(handler, (StderrHandler, logging.NullHandler)):
            logger.removeHandler(handler)
    if level is None:
        # A NullHandler keeps logging's last-resort handler from printing warnings unasked.
        logger.addHandler(logging.NullHandler())
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        return logger
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # one line per record, even when the root logger has a handler
    return logger
