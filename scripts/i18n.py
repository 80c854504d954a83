"""Keep the message catalogs current: extract every ``_("...")`` and ``N_("...")`` string of
``src/suanli`` (Babel), merge them into ``locale/zh/LC_MESSAGES/suanli.po`` (translations kept,
new messages added untranslated, gone ones dropped) and compile ``suanli.mo``.

Run: python scripts/i18n.py            (then translate the empty msgstr entries and run again)
     python scripts/i18n.py --check     (exit 1 when the .po or .mo is out of date; CI's test)
"""

from __future__ import annotations

import datetime
import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "suanli"
PO = SOURCE / "i18n" / "locale" / "zh" / "LC_MESSAGES" / "suanli.po"
MO = PO.with_suffix(".mo")
KEYWORDS = {"_": None, "N_": None, "C_": ((1, "c"), 2)}
FIXED_DATE = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)


def template() -> Catalog:
    """Every marked message of the source, with where it is used."""
    catalog = Catalog(project="suanli", fuzzy=False)
    found = extract_from_dir(
        str(SOURCE), method_map=[("**.py", "python")], keywords=KEYWORDS, comment_tags=("i18n:",)
    )
    for filename, lineno, message, comments, context in found:
        catalog.add(
            message,
            locations=[(f"suanli/{filename}", lineno)],
            auto_comments=comments,
            context=context,
        )
    return catalog


def merged() -> Catalog:
    """The Chinese catalog updated to the current messages."""
    with PO.open("rb") if PO.exists() else io.BytesIO() as f:
        catalog = read_po(f, locale="zh_Hans_CN") if PO.exists() else Catalog(locale="zh")
    catalog.update(template(), no_fuzzy_matching=True)
    catalog.obsolete.clear()
    # Fixed dates: the files change only when a message or a translation does.
    catalog.creation_date = catalog.revision_date = FIXED_DATE
    return catalog


def rendered(catalog: Catalog) -> tuple[bytes, bytes]:
    """The .po and .mo bytes of ``catalog``."""
    po, mo = io.BytesIO(), io.BytesIO()
    write_po(po, catalog, width=100, omit_header=False, ignore_obsolete=True, include_lineno=False)
    write_mo(mo, catalog)
    return po.getvalue(), mo.getvalue()


def main() -> int:
    """Update the files, or with --check say whether they are current."""
    catalog = merged()
    po, mo = rendered(catalog)
    missing = [m.id for m in catalog if m.id and not m.string]
    if "--check" in sys.argv:
        stale = not PO.exists() or PO.read_bytes() != po or not MO.exists() or MO.read_bytes() != mo
        if stale:
            print("the catalog is out of date: run python scripts/i18n.py")
        for message in missing:
            print(f"no Chinese for: {message!r}")
        return 1 if stale or missing else 0
    PO.write_bytes(po)
    MO.write_bytes(mo)
    print(f"{PO.relative_to(ROOT)}: {len(catalog) - 1} messages, {len(missing)} untranslated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
