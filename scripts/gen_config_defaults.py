"""Write src/suanli/models/data/config_defaults.json from the installed transformers.

For every model type suanli reads exactly, the scalar defaults of its configuration class and
its key aliases (suanli.models.library_defaults explains why and how they are used). Run it in
the locked test environment after the lock moves transformers:
``.venv/bin/python scripts/gen_config_defaults.py``. tests/models/test_library_defaults.py fails
while the table differs from what the installed transformers declares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = (
    Path(__file__).resolve().parent.parent
    / "src"
    / "suanli"
    / "models"
    / "data"
    / "config_defaults.json"
)


def rendered() -> str:
    """The table's text for the installed transformers."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from suanli.models.config import SUPPORTED_MODEL_TYPES
    from suanli.models.library_defaults import class_defaults

    types = {}
    for model_type in SUPPORTED_MODEL_TYPES:
        if model_type not in CONFIG_MAPPING:
            continue
        found = class_defaults(CONFIG_MAPPING[model_type])
        types[model_type] = {"defaults": dict(found.defaults), "aliases": dict(found.aliases)}
    doc = {
        "source": "configuration classes of transformers (scripts/gen_config_defaults.py)",
        "transformers": transformers.__version__,
        "model_types": types,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main() -> int:
    """Write the table; print how many model types it holds."""
    text = rendered()
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT.name}: {len(json.loads(text)['model_types'])} model types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
