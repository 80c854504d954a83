"""What every answer shares: the JSON serialisation of a typed result and its JSON Schema.

An answer is a frozen dataclass holding numbers in base units (bytes, seconds, FLOP, FLOP/s, USD).
Its JSON document is its fields, in order, after ``schema_version``; a field's ``metadata`` can
say how it is written:

- ``json=False``: kept for Python users and renderers, left out of the JSON;
- ``omit_none=True``: left out of the JSON while it is ``None`` (keys that appear only when an
  option was given, such as ``perf --tokens``);
- ``flatten=True``: a nested dataclass whose keys are written at this level.

The same walk over the type hints gives the JSON Schema published in ``docs/schemas/``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

#: Bumped when a key of any answer is renamed, removed or changes meaning (docs/changelog.md).
SCHEMA_VERSION = 3

T = TypeVar("T")

#: Field metadata helpers (see the module docstring).
NOT_IN_JSON: Mapping[str, Any] = types.MappingProxyType({"json": False})
OMIT_NONE: Mapping[str, Any] = types.MappingProxyType({"omit_none": True})
FLATTEN: Mapping[str, Any] = types.MappingProxyType({"flatten": True})
FLATTEN_OPTIONAL: Mapping[str, Any] = types.MappingProxyType({"flatten": True, "omit_none": True})


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of ``value``: dataclasses as objects, tuples as lists.

    Non-finite floats are kept (the CLI writes them as JSON's extensions, the web page as null).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_json(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def _fields_json(obj: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.metadata.get("json") is False:
            continue
        value = getattr(obj, f.name)
        if value is None and f.metadata.get("omit_none"):
            continue
        if f.metadata.get("flatten"):
            doc.update(jsonable(value))
        else:
            doc[f.name] = jsonable(value)
    return doc


def from_result(cls: type[T], result: Any, **changes: Any) -> T:
    """An answer type built from an estimator's result: every field of ``cls`` that ``result``
    has takes its value, ``changes`` set the rest (or override a value, e.g. rounded to whole
    bytes). The one conversion the answers use, so no answer copies a result field by field."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    values = {n: getattr(result, n) for n in names if n not in changes and hasattr(result, n)}
    return cls(**values, **changes)


class Answer:
    """Mixin of the top-level answer types: ``to_json()`` is the document every front-end
    serves (``suanli ... --json``, the web endpoint, ``answer.to_json()`` in Python)."""

    #: The document's name in docs/schemas/ (set by each answer type).
    schema_name: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON document: ``schema_version`` first, then the fields in order."""
        return {"schema_version": SCHEMA_VERSION, **_fields_json(self)}


# --- JSON Schema from the type hints ------------------------------------------------------------

_SCALARS: dict[Any, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any or tp is object:
        return {}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [_schema(a, defs) for a in get_args(tp)]
        return {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(get_args(tp))}
    if origin in (list, tuple):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return {"type": "array", "items": _schema(args[0], defs) if args else {}}
    if origin in (dict, Mapping) or tp is dict:
        kv = get_args(tp)
        return {"type": "object", "additionalProperties": _schema(kv[1], defs) if kv else {}}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            defs[name] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for the type {tp!r}")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass (the attribute-docstring idiom)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = get_type_hints(cls)
    docs = field_docs(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("json") is False:
            continue
        if f.metadata.get("flatten"):
            inner_type = hints[f.name]
            if get_origin(inner_type) in (Union, types.UnionType):
                inner_type = next(a for a in get_args(inner_type) if a is not type(None))
            inner = _object_schema(inner_type, defs)
            properties.update(inner["properties"])
            if not f.metadata.get("omit_none"):
                required.extend(inner["required"])
            continue
        prop = _schema(hints[f.name], defs)
        doc = f.metadata.get("doc") or docs.get(f.name)
        if doc:
            prop["description"] = doc
        properties[f.name] = prop
        if not f.metadata.get("omit_none"):
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    return out


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an answer type's ``to_json()`` document."""
    defs: dict[str, Any] = {}
    body = _object_schema(cls, defs)
    if issubclass(cls, Answer):
        body["properties"] = {
            "schema_version": {"const": SCHEMA_VERSION},
            **body["properties"],
        }
        body["required"] = ["schema_version", *body["required"]]
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": cls.__name__,
        **body,
    }
    if defs:
        schema["$defs"] = defs
    return schema
