"""``suanli frameworks [NAME]``: the frameworks ``--framework`` accepts and what each sets."""

from __future__ import annotations

import click

from suanli.cli.render import print_json, print_table


@click.command("frameworks")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def frameworks_cmd(name: str | None, as_json: bool) -> None:
    """Training and serving frameworks, and the option defaults each one implies.

    Without NAME: one line per framework. With NAME (an id or alias such as megatron, nemo,
    torchtune, vllm): every option it sets, why, and the file of the framework it was read
    from. '--framework NAME' on mem, perf, plan, fit, compare and capacity applies them to the
    options you do not set yourself.
    """
    from suanli.answers.frameworks import framework_list

    answer = framework_list(name)
    if as_json:
        print_json(answer.to_json())
        return
    if name is None:
        rows = [
            [
                fw.id,
                fw.kind,
                fw.name,
                ", ".join(f"{d.option}={d.value}" for d in fw.defaults) or "-",
            ]
            for fw in answer.frameworks
        ]
        print_table("frameworks (--framework NAME)", ["id", "kind", "name", "sets"], rows)
        return
    fw = answer.frameworks[0]
    print_table(
        f"{fw.name} ({fw.version})",
        ["option", "value", "why", "read from"],
        [[d.option, str(d.value), d.why, d.source] for d in fw.defaults]
        or [["-", "-", "no defaults: suanli's own", fw.source]],
    )
    click.echo(f"aliases: {', '.join(fw.aliases) or '-'}")
    click.echo(f"techniques it offers: {', '.join(fw.techniques) or '-'}")
    if fw.notes:
        click.echo(f"notes: {fw.notes}")
    click.echo(f"source: {fw.source}")
