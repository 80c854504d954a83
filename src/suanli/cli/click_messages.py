"""click's own words, marked for the catalog so that ``--lang zh`` shows them in Chinese.

click writes its help headings, its option extras and its usage errors in English with
``gettext``'s default domain, which suanli does not install. The templates below are click 8's
format strings (``click/core.py``, ``exceptions.py``, ``parser.py``, ``types.py``), written as
the English text click produces; where click joins two of them (``No such option '--x'. Did you
mean '--y'?``, ``File 'x' does not exist.``) the joined text is one template here. Nothing
imports these names: they exist for the catalog, and :func:`suanli.i18n.sentence` recognises
click's messages by them (``cli/main.py`` passes every usage error through it), while the help
formatter in ``cli/main.py`` translates the headings and extras by their message ids.
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

#: Usage errors, as click writes them.
ERRORS = (
    N_("No such option {name!r}."),
    N_("No such option {name!r}. Did you mean {possibility}?"),
    N_("No such option {name!r}. (Did you mean one of: {possibilities}?)"),
    N_("No such command {name!r}."),
    N_("No such command {name!r}. Did you mean {possibility}?"),
    N_("No such command {name!r}. (Did you mean one of: {possibilities}?)"),
    N_("Missing command."),
    N_("Missing argument {param_hint}."),
    N_("Missing option {param_hint}."),
    N_("Missing parameter {param_hint}."),
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
    # click.INT, FLOAT, IntRange, FloatRange: "{value!r} is not a valid {number_type}."
    N_("{value!r} is not a valid integer."),
    N_("{value!r} is not a valid integer range."),
    N_("{value!r} is not a valid float."),
    N_("{value!r} is not a valid float range."),
    N_("{value} is not in the range {range}."),
    N_("{value!r} is not a valid boolean. Recognized values: {states}"),
    N_("{value!r} is not a valid UUID."),
    N_("{value!r} is not one of {choices}."),
    N_("{value!r} does not match the format {format}."),
    N_("{value!r} does not match the formats {formats}."),
    N_("Could not open file {filename!r}: {message}"),
    # click.Path: "{name} {filename!r} ...", name being File, Directory or Path.
    N_("File {filename!r} does not exist."),
    N_("Directory {filename!r} does not exist."),
    N_("Path {filename!r} does not exist."),
    N_("File {filename!r} is a file."),
    N_("Directory {filename!r} is a file."),
    N_("Path {filename!r} is a file."),
    N_("File {filename!r} is a directory."),
    N_("Directory {filename!r} is a directory."),
    N_("Path {filename!r} is a directory."),
    N_("File {filename!r} is not readable."),
    N_("Directory {filename!r} is not readable."),
    N_("Path {filename!r} is not readable."),
    N_("File {filename!r} is not writable."),
    N_("Directory {filename!r} is not writable."),
    N_("Path {filename!r} is not writable."),
    N_("File {filename!r} is not executable."),
    N_("Directory {filename!r} is not executable."),
    N_("Path {filename!r} is not executable."),
)
