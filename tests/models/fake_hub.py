"""A Hugging Face hub without the network: huggingface_hub's own functions are replaced, files
are laid out as the library's cache lays them (``models--org--name/snapshots/<commit>/...``) and
every call is recorded, so tests can check what reached the library (a revision, offline mode)."""

from __future__ import annotations

import hashlib
import json
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

hf = pytest.importorskip("huggingface_hub")
errors = pytest.importorskip("huggingface_hub.utils")


def commit_of(text: str) -> str:
    """A 40-digit commit standing for a revision name."""
    return hashlib.sha1(text.encode()).hexdigest()


def hub_exception(name: str, message: str = "404 Client Error") -> BaseException:
    """One of huggingface_hub's typed errors, built without an HTTP response."""
    cls = getattr(errors, name, None)
    if cls is None:  # RemoteEntryNotFoundError is newer than EntryNotFoundError
        cls = errors.EntryNotFoundError
    exc: BaseException = cls.__new__(cls)
    BaseException.__init__(exc, message)
    return exc


@dataclass
class FakeHub:
    """Repos as ``{repo_id: {revision: {filename: text}}}``; ``fail`` raises for every call."""

    cache: Path
    repos: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    fail: BaseException | None = None
    calls: list[tuple[str, str, str | None, bool]] = field(default_factory=list)
    info_calls: list[tuple[str, str | None]] = field(default_factory=list)
    safetensors_calls: list[tuple[str, str | None]] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)

    def add(self, repo_id: str, files: dict[str, Any], revision: str = "main") -> str:
        """Publish ``files`` (dicts are written as JSON) at ``revision``; returns its commit."""
        texts = {k: v if isinstance(v, str) else json.dumps(v) for k, v in files.items()}
        self.repos.setdefault(repo_id, {})[revision] = texts
        return self._commit(repo_id, revision, texts)

    @staticmethod
    def _commit(repo_id: str, revision: str, texts: dict[str, str]) -> str:
        return commit_of(repo_id + revision + json.dumps(texts, sort_keys=True))

    def _resolve(self, repo_id: str, revision: str | None) -> tuple[str, dict[str, str]]:
        rev = revision or "main"
        for name, files in self.repos.get(repo_id, {}).items():
            commit = self._commit(repo_id, name, files)
            if rev in (name, commit):
                return commit, files
        if repo_id not in self.repos:
            raise hub_exception("RepositoryNotFoundError")
        raise hub_exception("RevisionNotFoundError")

    def hf_hub_download(
        self,
        repo_id: str,
        filename: str,
        *,
        revision: str | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> str:
        self.calls.append((repo_id, filename, revision, local_files_only))
        if self.fail is not None:
            raise self.fail
        if local_files_only:  # what the library does offline: the cache or nothing
            folder = self.cache / f"models--{repo_id.replace('/', '--')}" / "snapshots"
            hits = sorted(folder.glob(f"*/{filename}")) if folder.is_dir() else []
            if not hits:
                raise hub_exception("LocalEntryNotFoundError", "Cannot find the requested files")
            return str(hits[-1])
        commit, files = self._resolve(repo_id, revision)
        if filename not in files:
            raise hub_exception("RemoteEntryNotFoundError")
        path = self.cache / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit
        path = path / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[filename], encoding="utf-8")
        return str(path)

    def model_info(self, repo_id: str, revision: str | None = None, **kwargs: Any) -> Any:
        self.info_calls.append((repo_id, revision))
        if self.fail is not None:
            raise self.fail
        commit, _ = self._resolve(repo_id, revision)
        return types.SimpleNamespace(sha=commit)

    def get_safetensors_metadata(self, repo_id: str, revision: str | None = None) -> Any:
        self.safetensors_calls.append((repo_id, revision))
        _, files = self._resolve(repo_id, revision)
        if "safetensors" not in files:
            raise hub_exception("NotASafetensorsRepoError")
        raw = json.loads(files["safetensors"])
        return types.SimpleNamespace(
            parameter_count=raw["by_dtype"], files_metadata=dict.fromkeys(range(raw["files"]))
        )

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
        """Replace huggingface_hub's functions with this fake, online, suanli's cache in tmp."""
        monkeypatch.setattr(hf, "hf_hub_download", self.hf_hub_download)
        monkeypatch.setattr(hf, "model_info", self.model_info)
        monkeypatch.setattr(hf, "get_safetensors_metadata", self.get_safetensors_metadata)
        monkeypatch.setattr(hf.constants, "HF_HUB_OFFLINE", False)
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("SUANLI_CACHE", str(self.cache.parent / "suanli-cache"))
        return self
