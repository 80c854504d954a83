"""Workload options shared by ``mem``, ``perf``, ``plan``, ``fit`` and ``verify``: same names,
same meanings, generated from their one declaration (:mod:`suanli.answers.options`: default,
bounds, choices, help). ``work_request`` turns them into the application layer's
:class:`~suanli.answers.request.WorkRequest`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from suanli.answers.option_type import Option
from suanli.answers.options import OPTIONS
from suanli.cli.types import FloatRange, IntRange
from suanli.i18n import N_

if TYPE_CHECKING:
    from suanli.answers.request import WorkRequest
    from suanli.estimate.workload import InferWork, TrainWork


def _enter_revision(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Read hub ids at ``value`` for the rest of the command (the answers' loaders and the
    diffusion hub reader take it from :func:`suanli.models.hub.hub_revision`)."""
    if value is not None:
        from suanli.models.hub import hub_revision

        ctx.with_resource(hub_revision(value))


#: ``--revision REV``: the branch, tag or commit of a Hugging Face model. Not a workload option
#: (it never reaches the request): it scopes the hub reads of the command it decorates.
revision_option = click.option(
    "--revision",
    metavar="REV",
    default=None,
    expose_value=False,
    callback=_enter_revision,
    help=N_("Branch, tag or commit of a Hugging Face model id (default: main)."),
)


class DeclaredOption(click.Option):
    """A click option whose help may list catalog data: its ``{holes}`` are filled the first
    time the help is read (``--help``, a translation), so a command that never shows it never
    reads the catalog. The filled help keeps its message id and values (``N_(...).format``), so
    ``--lang zh`` translates it by its id."""

    def __init__(
        self,
        *args: Any,
        help_values: Callable[[], Mapping[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        self._help: str | None = None
        self._template: str | None = kwargs.get("help")  # before click cleans it into a str
        self._help_values = help_values
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str | None:
        """The help, its holes filled on first reading."""
        if self._help_values is not None and self._template is not None:
            self._help = self._template.format(**self._help_values())
            self._help_values = None
        return self._help

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value


class BoundedText(click.ParamType[str]):
    """Text of at most ``max_length`` characters (a framework id, a weight format)."""

    name = "text"

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """The text, or one sentence when it is longer than allowed."""
        text = str(value)
        if len(text) > self.max_length:
            self.fail(
                N_("{value!r} is longer than {limit} characters").format(
                    value=text if len(text) <= 60 else text[:60] + "...", limit=self.max_length
                ),
                param,
                ctx,
            )
        return text


def click_type(option: Option) -> click.ParamType[Any] | None:
    """The click type that holds ``option`` to its declared choices, bounds or length (None
    for a flag)."""
    if option.flag:
        return None
    if option.choices:
        return click.Choice((*option.choices, *option.cli_choices))
    if option.kind is int:
        low = None if option.minimum is None else int(option.minimum)
        high = None if option.maximum is None else int(option.maximum)
        return IntRange(low, high, min_open=option.min_open, max_open=option.max_open)
    if option.kind is float:
        return FloatRange(
            option.minimum, option.maximum, min_open=option.min_open, max_open=option.max_open
        )
    return BoundedText(option.max_length) if option.max_length else click.STRING


def declared_option(option: Option, *names: str) -> Callable[[Any], Any]:
    """The click decorator of ``option`` (``names``: the parameter's own name where the command
    takes it under another, e.g. ``"output_tokens"``)."""
    kwargs: dict[str, Any] = {
        "cls": DeclaredOption,
        "help": option.help,
        "help_values": option.help_values,
        "metavar": option.metavar,
    }
    if option.flag:
        # "--x/--no-x": a framework preset may turn a switch on (deepspeed: --blocking-grad-reduce)
        # and the user must be able to say it is off for their run.
        kwargs.update(default=option.default)
        return click.option(f"{option.cli_name}/--no-{option.cli_name[2:]}", *names, **kwargs)
    kwargs.update(
        type=click_type(option),
        default=option.default,
        show_default=option.default is not None,
    )
    return click.option(option.cli_name, *names, **kwargs)


_OPTIONS: list[Callable[[Any], Any]] = [
    revision_option,
    *(declared_option(option) for option in OPTIONS),
]


def workload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with every shared workload option."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def shape_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with the workload-shape options only (``plan`` searches the layout
    and would otherwise have to ignore --tp, --batch and the like)."""
    for option in reversed([declared_option(o) for o in OPTIONS if not o.layout]):
        func = option(func)
    return revision_option(func)


def work_request(opts: dict[str, Any]) -> WorkRequest:
    """The request the shared workload options describe (other keys of ``opts`` are ignored)."""
    from suanli.answers.request import WorkRequest

    return WorkRequest.from_options({**opts, "explicit": given_options(opts)})


def given_options(opts: dict[str, Any]) -> tuple[str, ...] | None:
    """The options given on the command line (a framework's defaults never override them);
    None outside a click command."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    given = []
    for name in opts:
        source = ctx.get_parameter_source(name)
        if source in (
            ParameterSource.COMMANDLINE,
            ParameterSource.ENVIRONMENT,
        ):
            given.append(name)
    return tuple(sorted(given))


def work_from_options(opts: dict[str, Any]) -> TrainWork | InferWork:
    """Build the workload the options describe; raises ValueError on inconsistent values."""
    from suanli.answers.request import build_work

    return build_work(work_request(opts))
