"""Errors every layer may raise and every front-end knows how to show.

Bad input is a plain ``ValueError`` (one sentence saying what to change); the front-ends turn it
into exit code 2 or a 4xx answer. :class:`MissingExtra` is the one other expected failure.
"""

from __future__ import annotations


class MissingExtra(RuntimeError):
    """An optional dependency is not installed; the message names the extra to install."""
