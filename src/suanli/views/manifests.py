"""What the scheduler emitters share (:mod:`suanli.views.emit` for training,
:mod:`suanli.views.emit_serve` for serving): Kubernetes names and resources, YAML from objects,
and the rules that keep every emitted file data, never code (docs/security.md).

- Text a user supplied (a model name or path) never reaches a script or a manifest raw: one
  holding a control character or a line break is refused (:func:`refuse_control`); in a shell
  command it is one ``shlex.quote``-d word (:func:`shell_words`); in YAML it is a scalar the
  serializer quotes; in a comment it is escaped (:func:`comment_text`).
- Manifests are written by PyYAML's safe dumper from dicts and lists, never by formatting.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

from suanli.i18n import N_
from suanli.printable import ANY_CONTROL

#: The extended resource each vendor's Kubernetes device plugin advertises.
K8S_GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "habana.ai/gaudi"}

#: C0 and C1 controls, DEL, and the Unicode line and paragraph separators: any of them could end
#: a comment line or a YAML scalar in some reader.
_CONTROL = ANY_CONTROL


def refuse_control(text: str) -> str:
    """``text`` (a model name or path) unchanged, or ValueError with one sentence when it holds
    a control character or a line break."""
    if _CONTROL.search(text):
        raise ValueError(
            N_(
                "the model name or path holds a control character or a line break, which a job "
                "script could run as code; rename it"
            )
        )
    return text


def comment_text(text: str) -> str:
    """``text`` for a ``#`` comment line: one line, non-printable characters escaped."""
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


def shell_words(words: Iterable[str]) -> list[str]:
    """Each word quoted for a POSIX shell (``shlex.quote``): a value, never code."""
    return [shlex.quote(w) for w in words]


def shell_flag(flag: str) -> str:
    """A framework flag from the catalog (``--tensor-model-parallel-size 2``), each of its words
    quoted."""
    return " ".join(shell_words(shlex.split(flag)))


def dns_label(text: str) -> str:
    """``text`` as a DNS-1123 label of at most 52 characters (room for an Indexed Job's index
    suffix and Kubernetes' generated pod names)."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return label[:52].rstrip("-") or "suanli-job"


def yaml_documents(objects: list[dict[str, Any]]) -> str:
    """The objects as a YAML stream (``---`` between documents), by PyYAML's safe dumper: block
    style, keys in the order given, a multi-line string as a literal block where PyYAML can keep
    it exact (else it quotes it)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # a dict used twice (labels) is written twice, not as &anchor/*alias

    def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump_all(
        objects,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
        explicit_start=False,
    )
