"""Hub ids through huggingface_hub's own cache: revisions, offline mode as the library defines
it, and one typed sentence per failure (the library is faked: no network)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.models import hub
from suanli.models.resolve import ModelSourceError, load_model
from tests.models.fake_hub import FakeHub, hub_exception

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
LLAMA = json.loads((FIXTURES / "llama-3-8b.json").read_text())
QWEN = json.loads((FIXTURES / "qwen2.5-0.5b.json").read_text())
STORED = {"by_dtype": {"BF16": 8_030_261_248}, "files": 4}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    monkeypatch.setenv("SUANLI_LANG", "en")
    return FakeHub(tmp_path / "hf-cache").install(monkeypatch)


def cli(*args: str) -> tuple[int, str]:
    from suanli.cli.main import cli as group

    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.output


def test_config_comes_from_the_library_cache_at_the_revision(fake: FakeHub) -> None:
    fake.add("someone/my-llama", {"config.json": QWEN})
    commit = fake.add("someone/my-llama", {"config.json": LLAMA, "safetensors": STORED}, "v2")
    loaded = load_model("someone/my-llama", revision="v2")
    assert fake.calls == [("someone/my-llama", "config.json", "v2", False)]
    assert loaded.source == "hub" and loaded.params.total == 8_030_261_248
    # the safetensors headers are read at the commit the config came from, then kept by commit
    assert fake.safetensors_calls == [("someone/my-llama", commit)]
    assert loaded.stored is not None and loaded.stored.total == 8_030_261_248
    again = load_model("someone/my-llama", revision="v2")
    assert len(fake.calls) == 2  # the library decides what is fresh, every time
    assert len(fake.safetensors_calls) == 1 and again.stored == loaded.stored
    assert load_model("someone/my-llama").params.total == 494_032_768  # main is another config


def test_a_moved_branch_is_read_again(fake: FakeHub) -> None:
    """The old private copy was never refreshed; now a new commit gives the new config."""
    fake.add("someone/model", {"config.json": QWEN})
    assert load_model("someone/model").params.total == 494_032_768
    fake.add("someone/model", {"config.json": LLAMA, "safetensors": STORED})
    moved = load_model("someone/model")
    assert moved.params.total == 8_030_261_248 and moved.stored is not None


def test_revision_option_reaches_the_library(fake: FakeHub) -> None:
    fake.add("someone/my-llama", {"config.json": LLAMA}, "refs/pr/7")
    code, output = cli("mem", "someone/my-llama", "--revision", "refs/pr/7", "--task", "infer")
    assert code == 0, output
    assert fake.calls[0] == ("someone/my-llama", "config.json", "refs/pr/7", False)
    assert hub.current_revision() is None  # the command's revision ends with the command


def test_revision_sends_a_preset_id_to_the_hub(fake: FakeHub) -> None:
    with pytest.raises(ModelSourceError, match="not on the Hugging Face hub"):
        load_model("meta-llama/Llama-3.1-8B", revision="main")
    assert fake.calls[0][:3] == ("meta-llama/Llama-3.1-8B", "config.json", "main")
    assert load_model("meta-llama/Llama-3.1-8B").source == "preset"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("llama-3.1-8b", "--revision", "v2"), "applies to a Hugging Face id org/name"),
        (("someone/model", "--revision", "a b"), "is not a revision"),
        (("someone/model", "--revision", ""), "is not a revision"),
    ],
)
def test_a_revision_that_cannot_apply_is_one_sentence(
    fake: FakeHub, args: tuple[str, ...], message: str
) -> None:
    code, output = cli("mem", *args)
    assert code == 2 and message in output and "Traceback" not in output
    assert fake.calls == []


ERRORS = [
    (
        "GatedRepoError",
        hub.HubGatedError,
        ["is a gated model", "accept its licence", "huggingface-cli login", "HF_TOKEN"],
    ),
    (
        "RepositoryNotFoundError",
        hub.HubRepoNotFoundError,
        ["not on the Hugging Face hub, or is private", "check the id", "HF_TOKEN"],
    ),
    ("RevisionNotFoundError", hub.HubRevisionNotFoundError, ["has no revision 'v9'"]),
    (
        "RemoteEntryNotFoundError",
        hub.HubFileNotFoundError,
        ["has no config.json at v9", "not a transformers model", "local path"],
    ),
    (
        "LocalEntryNotFoundError",
        hub.HubUnreachableError,
        ["cannot reach the Hugging Face hub", "HF_ENDPOINT=https://hf-mirror.com"],
    ),
]


@pytest.mark.parametrize(("name", "typed", "words"), ERRORS)
def test_each_hub_failure_has_its_own_sentence(
    fake: FakeHub, name: str, typed: type[hub.HubError], words: list[str]
) -> None:
    fake.fail = hub_exception(name)
    with pytest.raises(ModelSourceError) as err:
        load_model("someone/model", revision="v9")
    assert isinstance(err.value.__cause__, typed)
    for word in words:
        assert word in str(err.value)
    code, output = cli("mem", "someone/model", "--revision", "v9")
    assert code == 2, output
    assert output.startswith("error: ") and output.count("\n") == 1
    assert all(word in output for word in words) and "Traceback" not in output


def test_messages_differ_between_failures(fake: FakeHub) -> None:
    sentences = set()
    for name, _, _ in ERRORS:
        fake.fail = hub_exception(name)
        with pytest.raises(ModelSourceError) as err:
            load_model("someone/model", revision="v9")
        sentences.add(str(err.value).split(";")[0])
    assert len(sentences) == len(ERRORS)


def test_no_connection_quotes_the_cause_and_the_mirror(
    fake: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    cause = OSError("[Errno -2] Name or service not known")
    wrapper = hub_exception("LocalEntryNotFoundError", "An error happened while trying ...")
    wrapper.__cause__ = cause
    fake.fail = wrapper
    with pytest.raises(ModelSourceError, match=r"Name or service not known\); check the conn"):
        load_model("someone/model")
    monkeypatch.setenv("HF_ENDPOINT", "https://mirror.example.org/")
    with pytest.raises(ModelSourceError, match=r"mirror https://mirror\.example\.org .*ENDPOINT"):
        load_model("someone/model")


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On"])
def test_offline_as_the_library_defines_it(
    fake: FakeHub, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub.is_offline()
    code, output = cli("mem", "someone/model", "--revision", "v9")
    assert (
        code == 2
        and "offline mode is on (HF_HUB_OFFLINE)" in output
        and "unset HF_HUB_OFFLINE" in output
    )
    assert fake.calls == [("someone/model", "config.json", "v9", True)]  # the cache only


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off"])
def test_online_values(fake: FakeHub, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert not hub.is_offline()


def test_the_library_constant_counts(fake: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    assert hub.is_offline()


def test_offline_reads_what_is_cached(fake: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.add("someone/my-llama", {"config.json": LLAMA, "safetensors": STORED})
    online = load_model("someone/my-llama")
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    offline = load_model("someone/my-llama")
    assert fake.calls[-1][3] is True and offline.params == online.params
    assert offline.stored == online.stored  # the summary kept by commit
    assert len(fake.safetensors_calls) == 1


def test_remote_code_is_never_imported(fake: FakeHub) -> None:
    cfg = dict(QWEN, auto_map={"AutoModelForCausalLM": "evil.EvilModel"})
    fake.add("someone/custom", {"config.json": cfg, "evil.py": "raise SystemExit(9)"})
    assert load_model("someone/custom").params.total == 494_032_768
    assert [c[1] for c in fake.calls] == ["config.json"]


def test_hub_revision_block_scopes_and_checks() -> None:
    assert hub.current_revision() is None
    with hub.hub_revision("v1"):
        assert hub.current_revision() == "v1"
        assert hub.current_revision("v2") == "v2"  # a call's own revision wins
        with hub.hub_revision(None):
            assert hub.current_revision() is None
    assert hub.current_revision() is None
    with pytest.raises(ValueError, match="is not a revision"), hub.hub_revision("a..b"):
        pass


def test_snapshot_commit() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert hub.snapshot_commit(Path(f"/c/models--a--b/snapshots/{sha}/vae/config.json")) == sha
    assert hub.snapshot_commit(Path("/tmp/config.json")) is None


def test_paths_cache_dir_keeps_suanli_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from suanli.models import resolve, traced

    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path))
    assert resolve.cache_dir() == tmp_path / "hub"
    assert traced._cache_dir() == tmp_path / "traced"
    monkeypatch.delenv("SUANLI_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):  # platformdirs follows the XDG specification there
        assert resolve.cache_dir() == tmp_path / "xdg" / "suanli" / "hub"
