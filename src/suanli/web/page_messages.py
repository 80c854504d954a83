"""The page's static labels (``data-i18n`` in static/index.html), marked for the message catalog:
``GET /api/messages`` serves their translations from the same gettext catalog as the CLI, and
static/lang.js puts them in place. A test keeps this list equal to the page's labels."""

from __future__ import annotations

from suanli.i18n import N_

PAGE_MESSAGES = (
    N_("Add a GPU to compare"),
    N_("Buy, rent or API"),
    N_("Card"),
    N_("GPUs"),
    N_("GPUs in the job"),
    N_("How many"),
    N_("Live GPUs"),
    N_("Memory per GPU"),
    N_("Model"),
    N_("Money"),
    N_("Plan"),
    N_("Popular models on it"),
    N_("Preset name or Hugging Face id"),
    N_("Show"),
    N_("Speed"),
    N_("Task"),
    N_("What can this card run?"),
    N_("Which GPU"),
    N_("Work"),
    N_("Years"),
    N_("against each card's capacity"),
    N_("speed where they fit"),
)
