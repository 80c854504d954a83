"""The parsed copies of the bundled TOML files kept between runs (catalog/toml_cache.py)."""

from __future__ import annotations

import math
import sys
from importlib import resources
from pathlib import Path

import pytest

from suanli.catalog.toml_cache import cache_path, parse_bundled_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEXT = 'title = "x"\ncount = 3\nratio = 3.0\nflag = true\n[[row]]\nid = "a"\nvalues = [1, 2.5]\n'


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory of suanli's own for one test."""
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _types(value: object) -> object:
    """The value with every leaf replaced by its type name (3 and 3.0 differ)."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


def test_a_second_read_comes_from_the_copy_and_equals_tomllib(cache: Path) -> None:
    first = parse_bundled_toml(TEXT, "test/one.toml")
    path = cache_path("test/one.toml")
    assert path.is_file() and path.parent.parent == cache
    written = path.stat().st_mtime_ns
    second = parse_bundled_toml(TEXT, "test/one.toml")
    expected = tomllib.loads(TEXT)
    assert first == second == expected
    assert _types(second) == _types(expected)  # 3 stays an int, 3.0 a float, true a bool
    assert path.stat().st_mtime_ns == written  # read, not written again


def test_a_changed_text_is_parsed_afresh(cache: Path) -> None:
    parse_bundled_toml(TEXT, "test/one.toml")
    changed = TEXT.replace("count = 3", "count = 4")
    assert parse_bundled_toml(changed, "test/one.toml")["count"] == 4
    assert parse_bundled_toml(TEXT, "test/one.toml")["count"] == 3


def test_a_corrupt_copy_is_parsed_again_and_replaced(cache: Path) -> None:
    parse_bundled_toml(TEXT, "test/one.toml")
    path = cache_path("test/one.toml")
    path.write_bytes(b"\xc1 not msgpack")
    assert parse_bundled_toml(TEXT, "test/one.toml") == tomllib.loads(TEXT)
    path.write_bytes(b"\x93\x01\x02\x03")  # valid MessagePack, not an entry
    assert parse_bundled_toml(TEXT, "test/one.toml") == tomllib.loads(TEXT)


def test_an_unwritable_cache_only_means_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SUANLI_CACHE", str(blocker))
    assert parse_bundled_toml(TEXT, "test/one.toml") == tomllib.loads(TEXT)


def test_values_messagepack_would_change_are_not_kept(cache: Path) -> None:
    text = "day = 2024-05-01\nodd = nan\n"
    doc = parse_bundled_toml(text, "test/dates.toml")
    assert not cache_path("test/dates.toml").exists()
    assert type(doc["day"]).__name__ == "date" and math.isnan(doc["odd"])


def test_malformed_toml_raises_as_tomllib_does(cache: Path) -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        parse_bundled_toml("a = \n", "test/bad.toml")
    assert not cache_path("test/bad.toml").exists()


def test_every_bundled_file_comes_back_exactly(cache: Path) -> None:
    data = resources.files("suanli.catalog") / "data"
    names = sorted(p.name for p in data.iterdir() if p.name.endswith(".toml"))
    assert len(names) > 10
    for name in names:
        text = (data / name).read_text("utf-8")
        parse_bundled_toml(text, f"catalog/{name}")
        assert cache_path(f"catalog/{name}").is_file(), name
        again = parse_bundled_toml(text, f"catalog/{name}")
        expected = tomllib.loads(text)
        assert again == expected and _types(again) == _types(expected), name
