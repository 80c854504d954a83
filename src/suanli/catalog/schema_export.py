"""Write the published JSON Schemas of the catalog's data files (``schemas/*.schema.json``).

The schemas are generated from the typed schemas (:mod:`suanli.catalog.schema`,
:mod:`suanli.catalog.costs_schema`) and committed, so that an editor can read them from the
installed package or from the repository; ``tests/test_schemas_catalog.py`` fails when a
committed file is stale. Regenerate with ``python -m suanli.catalog.schema_export``.
"""

from __future__ import annotations

import json
from pathlib import Path

from suanli.catalog.costs_schema import costs_json_schema
from suanli.catalog.schema import gpu_json_schema

#: Where the published schemas live (package data of ``suanli.catalog``).
SCHEMAS_DIR = Path(__file__).parent / "schemas"


def schema_documents() -> dict[str, str]:
    """File name -> the text it must hold."""
    docs = {"gpus.schema.json": gpu_json_schema(), "costs.schema.json": costs_json_schema()}
    return {
        name: json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
        for name, doc in docs.items()
    }


def write_schemas(folder: Path = SCHEMAS_DIR) -> list[Path]:
    """Write every schema into ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_documents().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - a maintainer's tool
    for written_path in write_schemas():
        print(written_path)
