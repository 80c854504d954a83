"""``suanli frameworks [NAME]``: the frameworks ``--framework`` accepts and what each sets."""

from __future__ import annotations

import click

from suanli.cli.render import print_json, print_line, print_table
from suanli.i18n import N_, _, sentence

#: The kinds of framework (English in the JSON), shown translated.
KIND_WORDS = (N_("train"), N_("serve"))


@click.command(
    "frameworks",
    help=N_(
        "Training and serving frameworks, and the option defaults each one implies.\n"
        "\n"
        "Without NAME: one line per framework. With NAME (an id or alias such as megatron, nemo, "
        "torchtune, vllm): every option it sets, why, and the file of the framework it was read "
        "from. '--framework NAME' on mem, perf, plan, fit, compare and capacity applies them to "
        "the options you do not set yourself."
    ),
)
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def frameworks_cmd(name: str | None, as_json: bool) -> None:
    """``suanli frameworks``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.frameworks import framework_list

    answer = framework_list(name)
    if as_json:
        print_json(answer.to_json())
        return
    if name is None:
        rows = [
            [
                fw.id,
                _(fw.kind),
                fw.name,
                ", ".join(f"{d.option}={d.value}" for d in fw.defaults) or "-",
            ]
            for fw in answer.frameworks
        ]
        print_table(
            _("frameworks (--framework NAME)"), [_("id"), _("kind"), _("name"), _("sets")], rows
        )
        return
    fw = answer.frameworks[0]
    print_table(
        f"{fw.name} ({fw.version})",
        [_("option"), _("value"), _("why"), _("read from")],
        [[d.option, str(d.value), sentence(d.why), d.source] for d in fw.defaults]
        or [["-", "-", _("no defaults: suanli's own"), fw.source]],
    )
    print_line(_("aliases: {aliases}").format(aliases=", ".join(fw.aliases) or "-"))
    print_line(
        _("techniques it offers: {techniques}").format(techniques=", ".join(fw.techniques) or "-")
    )
    if fw.notes:
        print_line(_("notes: {notes}").format(notes=sentence(fw.notes)))
    print_line(_("source: {source}").format(source=fw.source))
