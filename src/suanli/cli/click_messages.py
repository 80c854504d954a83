"""click's own words, marked for the catalog so that ``--lang zh`` shows them in Chinese.

click writes its help extras and its usage errors with ``gettext`` bound in each of its modules
(``_("No such option {name!r}.").format(name=...)``). In another language than English,
:func:`suanli.cli.main.speak_click` points those names at suanli's catalog, so click looks up
each of its message ids below and formats the Chinese with its own values: nothing is matched
afterwards. They are click 8's message ids (``click/core.py``, ``exceptions.py``, ``parser.py``,
``types.py``), verbatim. Nothing imports these names: they exist for the catalog. The help
headings are click's section names with a colon, translated by the help formatter in
``cli/main.py``.
"""

from __future__ import annotations

from suanli.i18n import N_

#: The help page: headings, the help and version options, the extras after an option's help.
HELP = (
    N_("Usage:"),
    N_("Options:"),
    N_("Commands:"),
    N_("Positional arguments:"),
    N_("Show this message and exit."),
    N_("Show the version and exit."),
    N_("default: {default}"),
    N_("env var: {var}"),
    N_("required"),
    N_("(dynamic)"),
)

#: Usage errors: click's message ids, as its modules pass them to gettext.
ERRORS = (
    N_("No such option {name!r}."),
    N_("No such command {name!r}."),
    N_("Did you mean {possibility}?"),
    N_("(Did you mean one of: {possibilities}?)"),
    N_("Missing command."),
    N_("Missing argument"),
    N_("Missing option"),
    N_("Missing parameter"),
    N_("Missing {param_type}"),
    N_("Missing parameter: {param_name}"),
    N_("Got unexpected extra argument ({args})"),
    N_("Got unexpected extra arguments ({args})"),
    N_("Option {name!r} requires an argument."),
    N_("Option {name!r} requires {nargs} arguments."),
    N_("Option {name!r} does not take a value."),
    N_("Argument {name!r} takes {nargs} values."),
    N_("Invalid value for {param_hint}: {message}"),
    N_("Invalid value: {message}"),
    N_("Value must be an iterable."),
    N_("Takes {nargs} values but 1 was given."),
    N_("Takes {nargs} values but {len} were given."),
    N_("{len_type} values are required, but {len_value} was given."),
    N_("{len_type} values are required, but {len_value} were given."),
    N_("{value!r} is not a valid {number_type}."),
    N_("{value} is not in the range {range}."),
    N_("{value!r} is not a valid boolean. Recognized values: {states}"),
    N_("{value!r} is not a valid UUID."),
    N_("{value!r} is not one of {choices}."),
    N_("{value!r} is not {choice}."),
    N_("{value!r} does not match the format {format}."),
    N_("{value!r} does not match the formats {formats}."),
    N_("Could not open file {filename!r}: {message}"),
    # click.Path: "{name} {filename!r} ...", name being _("file"), _("directory") or _("path").
    N_("file"),
    N_("directory"),
    N_("path"),
    N_("{name} {filename!r} does not exist."),
    N_("{name} {filename!r} is a file."),
    N_("{name} {filename!r} is a directory."),
    N_("{name} {filename!r} is not readable."),
    N_("{name} {filename!r} is not writable."),
    N_("{name} {filename!r} is not executable."),
    N_("Error: {message}"),
    N_("Aborted!"),
    N_("unknown error"),
)
