"""Open a file a user (or anyone who can write a folder suanli reads) named, as what it claims
to be: a regular file of bounded size (docs/security.md).

A FIFO would block a plain ``open`` for ever, ``/dev/zero`` or a symlink to it would be read
without end, a socket or a device is no config. Every reader of outside files (model configs,
GGUF and safetensors headers, training logs, catalog and price files, job reports, traces) opens
through :func:`open_regular`:

- the path's symlinks are resolved and the target must be a regular file (``stat``);
- it is opened ``O_NONBLOCK | O_NOCTTY`` (a FIFO swapped in after the check returns at once
  instead of waiting for a writer), and the open descriptor is checked again (``fstat``), so a
  swap between the check and the open is caught;
- reads stop at a size cap: the file's size is checked before reading and at most ``cap + 1``
  bytes are ever read.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO

from suanli.i18n import N_

#: A model file (GGUF, safetensors) is read for its header only; the cap only bounds nonsense.
MAX_MODEL_FILE_BYTES = 1 << 42


class UnsafeFileError(ValueError):
    """Not a regular file, or larger than the reader accepts; the message is one sentence."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return N_("a FIFO")
    if stat.S_ISSOCK(mode):
        return N_("a socket")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return N_("a device")
    if stat.S_ISDIR(mode):
        return N_("a folder")
    return N_("a special file")


def _refuse(path: str, mode: int) -> UnsafeFileError:
    return UnsafeFileError(
        N_("{path} is {kind}, not a regular file; pass the file itself").format(
            path=path, kind=_kind(mode)
        )
    )


def _too_large(path: str, cap_bytes: int) -> UnsafeFileError:
    return UnsafeFileError(
        N_("{path} is larger than {limit:,} bytes, more than this file can be; check it").format(
            path=path, limit=cap_bytes
        )
    )


def open_regular(path: str | Path, cap_bytes: int) -> BinaryIO:
    """``path`` opened for binary reading when it (or its symlink's target) is a regular file of
    at most ``cap_bytes``; OSError when it cannot be opened, UnsafeFileError otherwise."""
    name = str(path)
    resolved = os.path.realpath(name)
    mode = os.stat(resolved).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(name, mode)
    fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the check and the open
            raise _refuse(name, info.st_mode)
        if info.st_size > cap_bytes:
            raise _too_large(name, cap_bytes)
        os.set_blocking(fd, True)  # a regular file: ordinary reads from here on
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: str | Path, cap_bytes: int) -> bytes:
    """The whole of a regular file of at most ``cap_bytes`` (a file that grew past the cap while
    read is refused too)."""
    with open_regular(path, cap_bytes) as handle:
        data = handle.read(cap_bytes + 1)
    if len(data) > cap_bytes:
        raise _too_large(str(path), cap_bytes)
    return data


def read_regular_text(path: str | Path, cap_bytes: int, errors: str = "strict") -> str:
    """:func:`read_regular_bytes` decoded as UTF-8 (UnicodeDecodeError with ``errors="strict"``)."""
    return read_regular_bytes(path, cap_bytes).decode("utf-8", errors=errors)


def open_regular_text(path: str | Path, cap_bytes: int) -> io.TextIOWrapper:
    """A regular file of at most ``cap_bytes`` opened as UTF-8 text (undecodable bytes
    replaced), for readers that go line by line."""
    return io.TextIOWrapper(open_regular(path, cap_bytes), encoding="utf-8", errors="replace")
