"""The Hugging Face hub, read the way its own library reads it.

- Files come through ``huggingface_hub.hf_hub_download`` into the library's cache
  (``HF_HUB_CACHE`` / ``HF_HOME``), so a branch that moves is refreshed, a commit is fetched once,
  ``HF_ENDPOINT`` mirrors and ``HF_TOKEN`` work, and a cached file is served offline.
- Offline mode is the library's: ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to 1, true,
  yes or on, in any case. Offline, only the cache is read.
- Only JSON and headers are read (``config.json``, ``model_index.json``, safetensors and GGUF
  headers); nothing is imported from a repo and ``trust_remote_code`` is never passed.
- Each failure is a typed :class:`HubError` with one sentence: what is wrong and what to do
  (gated, missing or private, no such revision, no such file, offline, unreachable).

A revision (branch, tag or commit) is given per call, or for a whole block with
:func:`hub_revision` (the CLI's ``--revision``). ``huggingface_hub`` is imported only when a hub
id is read.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from suanli.i18n import N_

#: The values huggingface_hub reads as true in its boolean environment variables
#: (``huggingface_hub.constants.ENV_VARS_TRUE_VALUES``), compared upper-cased.
TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
#: The mirror suggested when the hub cannot be reached (users in mainland China use it widely).
MIRROR = "https://hf-mirror.com"
#: The hub itself, when ``HF_ENDPOINT`` does not name a mirror.
DEFAULT_ENDPOINT = "https://huggingface.co"
#: Longest revision accepted (git refs are limited to 255 bytes per component in practice).
MAX_REVISION_CHARS = 255
#: Characters of a library error quoted inside a message.
MAX_QUOTED_ERROR_CHARS = 120

_REVISION: ContextVar[str | None] = ContextVar("suanli_hub_revision", default=None)
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class HubError(ValueError):
    """A hub id that cannot be read; the message says what is wrong and what to do."""

    reason = "hub"


class HubGatedError(HubError):
    """The repo is gated: its licence must be accepted on the model page and a token given."""

    reason = "gated"


class HubRepoNotFoundError(HubError):
    """No such repo, or a private one the token (if any) cannot see."""

    reason = "not-found"


class HubRevisionNotFoundError(HubError):
    """The repo has no such branch, tag or commit."""

    reason = "revision-not-found"


class HubFileNotFoundError(HubError):
    """The repo (at that revision) has no such file."""

    reason = "file-not-found"


class HubOfflineError(HubError):
    """Offline mode is on and the file is not in the cache."""

    reason = "offline"


class HubUnreachableError(HubError):
    """The hub (or the mirror in ``HF_ENDPOINT``) did not answer, and nothing is cached."""

    reason = "unreachable"


class HubLibraryMissingError(HubError):
    """``huggingface_hub`` is not installed."""

    reason = "no-library"


def check_revision(revision: str) -> str:
    """``revision`` stripped; ValueError (one sentence) on an empty, over-long or odd one."""
    value = revision.strip()
    if (
        not value
        or len(value) > MAX_REVISION_CHARS
        or ".." in value
        or any(c.isspace() or not c.isprintable() for c in value)
    ):
        raise ValueError(
            N_(
                "{revision!r} is not a revision; give a branch, tag or commit of the model "
                "(default: main)"
            ).format(revision=revision[:80])
        )
    return value


@contextmanager
def hub_revision(revision: str | None) -> Iterator[None]:
    """Within the block, hub ids are read at ``revision`` (a branch, tag or commit) unless a call
    names its own; ``None`` keeps the default branch."""
    token = _REVISION.set(None if revision is None else check_revision(revision))
    try:
        yield
    finally:
        _REVISION.reset(token)


def current_revision(revision: str | None = None) -> str | None:
    """``revision`` when given, else the one of the enclosing :func:`hub_revision` block."""
    return check_revision(revision) if revision is not None else _REVISION.get()


def is_offline() -> bool:
    """Offline as huggingface_hub defines it: ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is
    1, true, yes or on (any case). The library's own flag counts when it is imported; the
    environment is read again because the library reads it once, at import."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").strip().upper() in TRUE_VALUES:
            return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def endpoint() -> str:
    """The hub address in use: ``HF_ENDPOINT`` (a mirror) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def snapshot_commit(path: Path) -> str | None:
    """The commit of a file in huggingface_hub's cache (``.../snapshots/<commit>/file``), or
    None for a file elsewhere."""
    for parent in path.parents:
        if parent.parent.name == "snapshots" and _COMMIT.match(parent.name):
            return parent.name
    return None


def library() -> Any:
    """The ``huggingface_hub`` module; :class:`HubLibraryMissingError` when it is not installed."""
    try:
        import huggingface_hub
    except ImportError:
        raise HubLibraryMissingError(
            N_(
                "reading a Hugging Face id needs huggingface_hub: pip install 'suanli[hub]', or "
                "pass a local path to the model's files"
            )
        ) from None
    return huggingface_hub


def hub_file(
    repo_id: str, filename: str, *, revision: str | None = None, missing: str | None = None
) -> Path:
    """The path of ``filename`` of ``repo_id`` in huggingface_hub's cache, fetched or refreshed
    by ``hf_hub_download`` (offline: the cached copy only). ``missing`` is the sentence for a
    repo without that file. Raises a :class:`HubError`."""
    hub = library()
    revision = current_revision(revision)
    offline = is_offline()
    try:
        kwargs: dict[str, Any] = {"revision": revision}
        if offline:
            kwargs["local_files_only"] = True  # the library's own flag may predate the variable
        with _quiet_library():
            return Path(hub.hf_hub_download(repo_id, filename, **kwargs))
    except Exception as exc:  # every library failure is translated below
        raise hub_error(
            exc, repo_id, revision=revision, filename=filename, missing=missing, offline=offline
        ) from None


def _class_names(exc: BaseException) -> set[str]:
    """The class names (with their bases) of ``exc`` and of the exceptions it was raised from:
    HfFileSystem wraps the library's typed errors in ``FileNotFoundError``."""
    names: set[str] = set()
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            break
        names.update(cls.__name__ for cls in type(current).__mro__)
        current = current.__cause__ or current.__context__
    return names


def _quoted(exc: BaseException) -> str:
    """The first line of the root cause of ``exc`` (``[Errno -2] Name or service not known``
    says more than the library's "cannot find the requested files" wrapper)."""
    root = exc
    for _ in range(8):
        inner = root.__cause__ or root.__context__
        if inner is None:
            break
        root = inner
    text = str(root).strip()
    line = text.splitlines()[0].strip() if text else type(root).__name__
    return line[:MAX_QUOTED_ERROR_CHARS]


@contextmanager
def _quiet_library() -> Iterator[None]:
    """Keep huggingface_hub's retry warnings off the terminal (the failure is reported as one
    sentence), unless suanli's own logging asks for debug output."""
    with suppress(ImportError):
        # Imported now, not inside the call: on import it resets its logger's level.
        import huggingface_hub.utils.logging  # noqa: F401
    lib_logger = logging.getLogger("huggingface_hub")
    if logging.getLogger("suanli").isEnabledFor(logging.DEBUG):
        yield
        return
    level = lib_logger.level
    lib_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        lib_logger.setLevel(level)


def offline_error(repo_id: str, filename: str, revision: str | None = None) -> HubOfflineError:
    """The error for a file that offline mode forbids fetching and the cache does not hold."""
    return HubOfflineError(
        N_(
            "{repo!r} ({file} at {revision}) is not cached from the Hugging Face hub and "
            "offline mode is on (HF_HUB_OFFLINE); run once online (unset HF_HUB_OFFLINE) to "
            "cache it, or pass a local path"
        ).format(repo=repo_id, file=filename, revision=revision or "main")
    )


def hub_error(
    exc: BaseException,
    repo_id: str,
    *,
    revision: str | None = None,
    filename: str = "config.json",
    missing: str | None = None,
    offline: bool | None = None,
) -> HubError:
    """The typed :class:`HubError` for a failure ``exc`` of huggingface_hub on ``repo_id``
    (classes are matched by name, so every library version since 0.20 is understood)."""
    if isinstance(exc, HubError):
        return exc
    rev = revision or "main"
    names = _class_names(exc)
    if "GatedRepoError" in names:
        return HubGatedError(
            N_(
                "{repo!r} is a gated model: accept its licence on "
                "https://huggingface.co/{repo}, then log in with 'hf auth login' "
                "(huggingface-cli login) or set HF_TOKEN"
            ).format(repo=repo_id)
        )
    if "RepositoryNotFoundError" in names or "DisabledRepoError" in names:
        return HubRepoNotFoundError(
            N_(
                "{repo!r} is not on the Hugging Face hub, or is private: check the id (org/name), "
                "or log in with 'hf auth login' or HF_TOKEN if you have access"
            ).format(repo=repo_id)
        )
    if "RevisionNotFoundError" in names:
        return HubRevisionNotFoundError(
            N_(
                "{repo!r} has no revision {revision!r}; give a branch, tag or commit listed on "
                "its 'Files and versions' page"
            ).format(repo=repo_id, revision=rev)
        )
    if "HFValidationError" in names:
        return HubRepoNotFoundError(
            N_("{repo!r} is not a valid Hugging Face id ({error}); give org/name").format(
                repo=repo_id, error=_quoted(exc)
            )
        )
    if is_offline() if offline is None else offline:
        return offline_error(repo_id, filename, revision)
    local_miss = "LocalEntryNotFoundError" in names or "OfflineModeIsEnabled" in names
    if not local_miss and ("EntryNotFoundError" in names or "FileNotFoundError" in names):
        return HubFileNotFoundError(
            missing
            or N_(
                "{repo!r} has no file {file} at {revision}; check the name on the model page"
            ).format(repo=repo_id, file=filename, revision=rev)
        )
    # The rest (no connection, a timeout, a 5xx, a cache miss after a failed look-up): the hub
    # or the mirror did not answer.
    where = endpoint()
    if where != DEFAULT_ENDPOINT:
        return HubUnreachableError(
            N_(
                "cannot read {repo!r} from the mirror {endpoint} ({error}); check the "
                "connection and HF_ENDPOINT, or pass a local path"
            ).format(repo=repo_id, endpoint=where, error=_quoted(exc))
        )
    return HubUnreachableError(
        N_(
            "cannot reach the Hugging Face hub for {repo!r} ({error}); check the connection, or "
            "use a mirror: HF_ENDPOINT={mirror}"
        ).format(repo=repo_id, error=_quoted(exc), mirror=MIRROR)
    )


def resolved_commit(repo_id: str, revision: str | None = None) -> str:
    """The commit ``revision`` (default: the main branch) of ``repo_id`` points to now, asked of
    the hub (``model_info``); a 40-digit commit is returned as given. Raises a :class:`HubError`
    (offline: :class:`HubOfflineError`)."""
    revision = current_revision(revision)
    if revision is not None and _COMMIT.match(revision):
        return revision
    if is_offline():
        raise offline_error(repo_id, "*", revision)
    hub = library()
    try:
        with _quiet_library():
            sha = hub.model_info(repo_id, revision=revision).sha
    except Exception as exc:  # translated below
        raise hub_error(exc, repo_id, revision=revision, filename="*", offline=False) from None
    if not isinstance(sha, str) or not _COMMIT.match(sha):
        raise HubUnreachableError(
            N_(
                "the Hugging Face hub gave no commit for {repo!r}; try again, or use a mirror: "
                "HF_ENDPOINT={mirror}"
            ).format(repo=repo_id, mirror=MIRROR)
        )
    return sha


def is_commit(revision: str | None) -> bool:
    """Whether ``revision`` is a full 40-digit commit hash (it never moves)."""
    return revision is not None and bool(_COMMIT.match(revision))


def safetensors_summary(repo_id: str, commit: str | None) -> dict[str, Any] | None:
    """Element counts per dtype and the file count from the repo's safetensors headers (HTTP
    range reads of the headers only), or None when the repo has none or the call fails: the
    stored count is an optional cross-check. Offline: None."""
    if is_offline():
        return None
    try:
        with _quiet_library():
            meta = library().get_safetensors_metadata(repo_id, revision=commit)
        return {
            "by_dtype": {str(k): int(v) for k, v in dict(meta.parameter_count).items()},
            "files": len(meta.files_metadata),
        }
    except Exception:  # no safetensors, or the header call failed: the count is optional
        return None
