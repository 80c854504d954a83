"""Text that reaches a terminal carries no control characters (docs/security.md).

A config file, a GGUF header or a job report can hold any text; printed raw, an ESC sequence in
it clears the screen, sets the window title or forges output. Every view strips C0 controls
(except tab and newline), DEL and C1 controls from what it prints (:func:`printable`), and the
readers refuse identifiers that are not plain names (``model_type``).
"""

from __future__ import annotations

import re

#: C0 controls except tab and newline, DEL, C1 controls (ESC and CSI start terminal sequences).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Any control character, newline and tab included, and the Unicode line separators.
ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` without the characters a terminal would act on (tab and newline stay)."""
    return CONTROL.sub("", text)
