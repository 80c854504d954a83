"""Entry point: the ``suanli`` command group and its error contract.

Bad input (a ValueError from the library, or a usage error) prints one line to stderr and exits
with status 2; a missing optional extra exits with status 1. No traceback reaches the user.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

import click

from suanli import __version__
from suanli.cli.render import FORMATTED_HELPS
from suanli.errors import MissingExtra
from suanli.i18n import LANGS, N_, _, is_sentence, message_of, sentence
from suanli.log import configure, level_from_environment
from suanli.printable import printable

log = logging.getLogger(__name__)
#: The variable click reads to answer a shell's completion request (see README, "Shell completion").
COMPLETE_ENV = "_SUANLI_COMPLETE"


def _echo_error(message: str) -> None:
    """``error: <message>`` on stderr, in the current language, with no control characters."""
    click.echo(printable(_("error: {message}").format(message=sentence(message))), err=True)


def _usage_message(exc: click.UsageError) -> str:
    """A usage error's message in the current language, without its closing full stop: ours
    (a sentence raised by an option's check) translated from its message id, click's written
    by click from the catalog (:func:`speak_click`)."""
    if is_sentence(exc.message):
        exc.message = sentence(exc.message)  # type: ignore[misc]  # before click formats it
    return str(exc.format_message()).rstrip(".。")


def _ngettext(singular: str, plural: str, count: int) -> str:
    return _(singular if count == 1 else plural)


def speak_click() -> None:
    """click's own messages in the current language: click calls ``_`` and ``ngettext`` bound
    in each of its modules (``from gettext import gettext as _``); they are pointed at suanli's
    catalog, which holds click's message ids (:mod:`suanli.cli.click_messages`), so click formats
    the translation with its own values."""
    import click.core
    import click.decorators
    import click.exceptions
    import click.parser
    import click.termui
    import click.types

    modules = (click.core, click.decorators, click.exceptions, click.parser, click.termui)
    for module in (*modules, click.types):
        if hasattr(module, "_"):
            module._ = _  # type: ignore[attr-defined]
        if hasattr(module, "ngettext"):
            module.ngettext = _ngettext  # type: ignore[attr-defined]


class SuanliHelpFormatter(click.HelpFormatter):
    """click's help page with its own words (``Usage:``, ``Options:``, ``[default: ...]``,
    ``Show this message and exit.``) in the current language; English is click's as it is."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        if prefix is None:
            usage = _("Usage:")
            prefix = (
                usage if usage.endswith("：") else usage + " "
            )  # a full-width colon spaces itself
        super().write_usage(prog, args, prefix)

    def write_heading(self, heading: str) -> None:
        msgid = f"{heading}:"  # "Options:", "Commands:" (marked in cli/click_messages.py)
        translated = _(msgid)
        if translated == msgid:
            super().write_heading(heading)
        else:
            self.write(f"{'':>{self.current_indent}}{translated}\n")

    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        from suanli.i18n import current

        cells = [(term, _help_cell(text)) for term, text in rows]
        if current() == "en":
            super().write_dl(cells, col_max, col_spacing)
        else:
            self._write_dl_by_cells(cells, col_max, col_spacing)

    def write_text(self, text: str) -> None:
        from suanli.i18n import current

        if current() == "en":
            super().write_text(text)
            return
        from suanli.cli.render import wrap_cells

        indent = " " * self.current_indent
        for i, paragraph in enumerate(text.split("\n\n")):
            if i:
                self.write("\n")
            if paragraph.lstrip().startswith("\b"):
                # click's marker for a paragraph printed as written.
                for line in paragraph.lstrip()[1:].strip("\n").splitlines():
                    self.write(f"{indent}{line}\n")
                continue
            for line in wrap_cells(paragraph, max(self.width - self.current_indent, 11)):
                self.write(f"{indent}{line}\n")

    def _write_dl_by_cells(
        self, rows: list[tuple[str, str]], col_max: int, col_spacing: int
    ) -> None:
        """The two-column option list, its help wrapped by terminal cells: click counts
        characters, and a Chinese character takes two cells, so its help ran past the edge."""
        from suanli.cli.render import wrap_cells

        first = min(max((len(term) for term, _ in rows), default=0), col_max) + col_spacing
        margin = " " * (first + self.current_indent)
        width = max(self.width - first - 2, 10)
        for term, text in rows:
            self.write(f"{'':>{self.current_indent}}{term}")
            if not text:
                self.write("\n")
                continue
            if len(term) <= first - col_spacing:
                self.write(" " * (first - len(term)))
            else:
                self.write("\n" + margin)
            lines = wrap_cells(text, width)
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write(margin + line + "\n")


#: An option's help with click's extras after it: "help  [default: 2; x>=1]".
_EXTRAS = re.compile(r"(?P<help>.*?)(?P<gap>\s*)\[(?P<extras>[^\[\]]*)\]", re.DOTALL)


def _help_cell(text: str) -> str:
    """One help cell of an option or command list in the current language."""
    from suanli.i18n import current

    if current() == "en" or not text:
        return text
    translated = _(text)
    if translated != text:
        return translated
    found = _EXTRAS.fullmatch(text)
    if not found:
        return text
    items = []
    for item in found.group("extras").split("; "):
        if item.startswith("default: "):
            item = _("default: {default}").format(default=item.removeprefix("default: "))
        elif item.startswith("env var: "):
            item = _("env var: {var}").format(var=item.removeprefix("env var: "))
        else:
            item = _(item)
        items.append(item)
    return f"{_(found.group('help'))}{found.group('gap')}[{'; '.join(items)}]"


class SuanliContext(click.Context):
    """A context whose help pages use :class:`SuanliHelpFormatter`."""

    formatter_class = SuanliHelpFormatter


class SuanliGroup(click.Group):
    """A click group that turns every expected failure into one sentence and an exit code, and
    imports a command's module only when that command is run (or the commands are listed)."""

    context_class = SuanliContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lazy: dict[str, tuple[str, str]] = {}
        self._loaded: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        """Every command, all their modules imported (help pages, completion, tests)."""
        for name in list(self._lazy):
            self._load(name)
        return self._loaded

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._loaded = dict(value)

    def lazy_command(self, name: str, module: str, attribute: str) -> None:
        """Register ``name`` as ``suanli.cli.<module>.<attribute>``, imported on first use:
        `suanli plan` imported the other twenty commands' modules, a tenth of its start-up."""
        self._lazy[name] = (module, attribute)

    def _load(self, name: str) -> None:
        module, attribute = self._lazy.pop(name)
        command = getattr(importlib.import_module(f"suanli.cli.{module}"), attribute)
        _bind_caps(command)
        self._loaded[name] = command

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._lazy.pop(name, None)
        self._loaded[name] = cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            self._load(cmd_name)
        return self._loaded.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._loaded, *self._lazy})

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo(_("aborted"), err=True)
            sys.exit(1)
        except click.UsageError as exc:
            log.debug("usage error", exc_info=True)
            where = exc.ctx.command_path if exc.ctx else "suanli"
            message = _usage_message(exc)
            click.echo(
                printable(
                    _("error: {message}; run '{where} --help' for usage").format(
                        message=message, where=where
                    )
                ),
                err=True,
            )
            sys.exit(2)
        except MissingExtra as exc:
            log.debug("missing extra", exc_info=True)
            _echo_error(message_of(exc))
            sys.exit(1)
        except ValueError as exc:
            log.debug("refused input", exc_info=True)  # --debug shows where it was refused
            _echo_error(message_of(exc))
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(0)


@click.group(
    cls=SuanliGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    help=N_(
        "suanli (算力): will it fit, how fast, which GPU, what cost, and why is my run slow.\n\n"
        "Planning commands work offline on the bundled GPU catalog and model presets."
    ),
)
@click.version_option(__version__, prog_name="suanli")
@click.option(
    "--lang",
    type=click.Choice(LANGS),
    default=None,
    expose_value=False,
    help=N_(
        "Language of the output: zh or en (default: SUANLI_LANG, then the locale); also "
        "accepted after the subcommand."
    ),
)
@click.option(
    "--debug",
    is_flag=True,
    default=False,
    expose_value=False,
    help=N_(
        "Print suanli's debug log on stderr (SUANLI_LOG=debug, info, warning or error sets a "
        "level too); also accepted after the subcommand."
    ),
)
def cli() -> None:
    """suanli (算力): will it fit, how fast, which GPU, what cost, and why is my run slow.

    Planning commands work offline on the bundled GPU catalog and model presets.
    """


#: Each command: its name, and the module of suanli.cli and the attribute that hold it.
COMMANDS = (
    ("gpus", "gpus", "gpus_cmd"),
    ("gpu", "gpus", "gpu_cmd"),
    ("card", "card", "card_cmd"),
    ("model", "model", "model_cmd"),
    ("models", "model", "models_cmd"),
    ("mem", "mem", "mem_cmd"),
    ("perf", "perf", "perf_cmd"),
    ("plan", "plan", "plan_cmd"),
    ("fit", "plan", "fit_cmd"),
    ("stencil", "stencil", "stencil_cmd"),
    ("cost", "cost", "cost_cmd"),
    ("explain", "explain", "explain_cmd"),
    ("bench", "bench", "bench_cmd"),
    ("verify", "verify", "verify_cmd"),
    ("capacity", "capacity", "capacity_cmd"),
    ("compare", "compare", "compare_cmd"),
    ("frameworks", "frameworks", "frameworks_cmd"),
    ("serve", "serve", "serve_cmd"),
    ("doctor", "live", "doctor_cmd"),
    ("top", "live", "top_cmd"),
    ("query", "live", "query_cmd"),
    ("export", "live", "export_cmd"),
)


def _register() -> None:
    for name, module, attribute in COMMANDS:
        cli.lazy_command(name, module, attribute)
    _bind_caps(cli, subcommands=False)  # each command's own when it is loaded


def _bind_caps(command: click.Command, subcommands: bool = True) -> None:
    """Every number option takes the bound suanli.limits gives its name (help shows it), every
    model or GPU parameter completes preset and GPU names, and every command's help page speaks
    the language chosen (``subcommands``: the command's own too)."""
    from suanli.cli.types import bind_completion, bind_named_cap

    command.context_class = SuanliContext  # help pages in the language chosen
    for param in command.params:
        bind_named_cap(param)
        bind_completion(param, command.name)
    if subcommands:
        for sub in getattr(command, "commands", {}).values():
            _bind_caps(sub)


_register()


def take_lang(argv: list[str]) -> tuple[str | None, list[str]]:
    """``--lang zh`` / ``--lang=zh`` anywhere before the arguments passed on to a script
    (``doctor run SCRIPT ARGS``: the script's own ``--lang`` is its own), and the rest."""
    rest: list[str] = []
    lang = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or arg.endswith(".py"):
            rest += argv[i:]
            break
        if arg == "--lang":
            if i + 1 >= len(argv):
                raise click.UsageError(_("--lang needs a value: zh or en"))
            lang = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--lang="):
            lang = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return lang, rest


def take_debug(argv: list[str]) -> tuple[bool, list[str]]:
    """Whether ``--debug`` is anywhere before the arguments passed on to a script (as for
    :func:`take_lang`), and the rest."""
    rest: list[str] = []
    debug = False
    for i, arg in enumerate(argv):
        if arg == "--" or arg.endswith(".py"):
            rest += argv[i:]
            break
        if arg == "--debug":
            debug = True
        else:
            rest.append(arg)
    return debug, rest


def start_log(debug: bool) -> None:
    """Show the ``suanli`` log on stderr at the level ``--debug`` (debug) or ``SUANLI_LOG``
    asks for, and nothing otherwise. Raises ``ValueError`` for a bad ``SUANLI_LOG``, except
    while a shell asks for completions (a completion never prints an error)."""
    if debug:
        configure(logging.DEBUG)
        return
    try:
        configure(level_from_environment())
    except ValueError:
        configure(None)
        if not os.environ.get(COMPLETE_ENV):
            raise


def translate_help(command: click.Command) -> None:
    """Every command's and option's help in the current language (their English text is the
    message id), before click formats any of it."""
    from suanli.i18n import _

    if command.help:
        command.help = _(command.help)
    if command.short_help:
        command.short_help = _(command.short_help)
    for param in command.params:
        if isinstance(param, click.Option) and param.help:
            # A help written from a template (the --vendor list) by its message id and values.
            written = param.help if is_sentence(param.help) else FORMATTED_HELPS.get(param.help)
            param.help = sentence(written) if written else _(param.help)
    for sub in getattr(command, "commands", {}).values():
        translate_help(sub)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: the language first (``--lang``, ``SUANLI_LANG``, the
    locale), then the command."""
    from suanli.i18n import current, set_lang

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        lang, args = take_lang(args)
        if lang is not None:
            set_lang(lang)
        debug, args = take_debug(args)
        start_log(debug)
    except (ValueError, click.UsageError) as exc:
        _echo_error(exc.format_message() if isinstance(exc, click.UsageError) else message_of(exc))
        sys.exit(2)
    log.debug("suanli %s, Python %s, arguments %s", __version__, sys.version.split()[0], args)
    if current() != "en":
        speak_click()
        translate_help(cli)
    try:
        cli.main(args=args, prog_name="suanli")
    finally:
        if argv is None:
            # The process ends here (the console script, python -m suanli): nothing it holds
            # needs collecting on the way out, and that last full collection of everything a
            # plan built took 30-40 ms of the 0.5 s of CPU `suanli plan` may spend. atexit
            # handlers and the flushing of the standard streams still run.
            gc.freeze()


if __name__ == "__main__":
    main()
