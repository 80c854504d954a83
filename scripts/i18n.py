"""Keep the message catalogs current: extract every ``_("...")`` and ``N_("...")`` string of
``src/suanli`` (Babel), merge them into ``locale/<lang>/LC_MESSAGES/suanli.po`` for each language
of ``suanli.i18n.LANGS`` but English (translations kept, new messages added untranslated, gone
ones dropped) and compile ``suanli.mo``.

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
sys.path.insert(0, str(ROOT / "src"))
from suanli.i18n import LANGS  # noqa: E402  (the source tree's, not an installed copy)

#: The Babel locale each catalog is written for (its header), when it is not the code itself.
BABEL_LOCALES = {"zh": "zh_Hans_CN"}
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


def po_path(lang: str) -> Path:
    """Where the catalog of ``lang`` lives (its ``.mo`` beside it)."""
    return SOURCE / "i18n" / "locale" / lang / "LC_MESSAGES" / "suanli.po"


def merged(lang: str) -> Catalog:
    """The catalog of ``lang`` updated to the current messages."""
    po = po_path(lang)
    with po.open("rb") if po.exists() else io.BytesIO() as f:
        locale = BABEL_LOCALES.get(lang, lang)
        catalog = read_po(f, locale=locale) if po.exists() else Catalog(locale=lang)
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


def update(lang: str, check: bool) -> bool:
    """Update the files of ``lang``, or with ``check`` say whether they are current."""
    catalog = merged(lang)
    po, mo = rendered(catalog)
    po_file = po_path(lang)
    mo_file = po_file.with_suffix(".mo")
    missing = [m.id for m in catalog if m.id and not m.string]
    if check:
        stale = (
            not po_file.exists()
            or po_file.read_bytes() != po
            or not mo_file.exists()
            or mo_file.read_bytes() != mo
        )
        if stale:
            print(f"the {lang} catalog is out of date: run python scripts/i18n.py")
        for message in missing:
            print(f"no {lang} for: {message!r}")
        return not (stale or missing)
    po_file.parent.mkdir(parents=True, exist_ok=True)
    po_file.write_bytes(po)
    mo_file.write_bytes(mo)
    print(f"{po_file.relative_to(ROOT)}: {len(catalog) - 1} messages, {len(missing)} untranslated")
    return True


def main() -> int:
    """Update every catalog, or with --check say whether they are all current."""
    check = "--check" in sys.argv
    current = [update(lang, check) for lang in LANGS if lang != "en"]
    return 0 if all(current) else 1


if __name__ == "__main__":
    sys.exit(main())
