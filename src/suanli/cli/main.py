"""Entry point: the ``suanli`` command group and its error contract.

Bad input (a ValueError from the library, or a usage error) prints one line to stderr and exits
with status 2; a missing optional extra exits with status 1. No traceback reaches the user.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from suanli import __version__
from suanli.errors import MissingExtra


class SuanliGroup(click.Group):
    """A click group that turns every expected failure into one sentence and an exit code."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "suanli"
            message = exc.format_message().rstrip(".")
            click.echo(f"error: {message}; run '{where} --help' for usage", err=True)
            sys.exit(2)
        except MissingExtra as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except ValueError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(0)


@click.group(cls=SuanliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="suanli")
def cli() -> None:
    """suanli (算力): will it fit, how fast, which GPU, what cost, and why is my run slow.

    Planning commands work offline on the bundled GPU catalog and model presets.
    """


def _register() -> None:
    from suanli.cli import (
        bench,
        capacity,
        card,
        compare,
        cost,
        explain,
        frameworks,
        gpus,
        live,
        mem,
        model,
        perf,
        plan,
        serve,
        stencil,
        verify,
    )

    cli.add_command(gpus.gpus_cmd)
    cli.add_command(gpus.gpu_cmd)
    cli.add_command(card.card_cmd)
    cli.add_command(model.model_cmd)
    cli.add_command(model.models_cmd)
    cli.add_command(mem.mem_cmd)
    cli.add_command(perf.perf_cmd)
    cli.add_command(plan.plan_cmd)
    cli.add_command(plan.fit_cmd)
    cli.add_command(stencil.stencil_cmd)
    cli.add_command(cost.cost_cmd)
    cli.add_command(explain.explain_cmd)
    cli.add_command(bench.bench_cmd)
    cli.add_command(verify.verify_cmd)
    cli.add_command(capacity.capacity_cmd)
    cli.add_command(compare.compare_cmd)
    cli.add_command(frameworks.frameworks_cmd)
    cli.add_command(serve.serve_cmd)
    for command in (live.doctor_cmd, live.top_cmd, live.query_cmd, live.export_cmd):
        cli.add_command(command)
    _bind_caps(cli)


def _bind_caps(command: click.Command) -> None:
    """Every number option takes the bound suanli.limits gives its name (help shows it)."""
    from suanli.cli.types import bind_named_cap

    for param in command.params:
        bind_named_cap(param)
    for sub in getattr(command, "commands", {}).values():
        _bind_caps(sub)


_register()


def main() -> None:
    """Console-script entry point."""
    cli.main(prog_name="suanli")


if __name__ == "__main__":
    main()
