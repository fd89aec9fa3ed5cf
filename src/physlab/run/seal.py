"""Which run records this machine wrote: run.json and metrics.json carry a seal, an HMAC-SHA256 of
their contents with a secret kept in PhysLab's home (``record.key``, created 0600 on first use).

Run directories are made to be shared, and a record says where a resume sends its requests, which
key variable it reads and which folder it indexes. A record that carries this machine's seal was
written here and not edited since; one without it (received, edited, or written before records
were sealed) is untrusted input: a resume asks before it follows what such a record chooses
(:mod:`physlab.run.resume`). The secret never leaves the home folder; a seal reveals nothing of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

KEY_FILE = "record.key"
FIELD = "seal"
_PREFIX = "hmac-sha256:"


def key_path() -> Path:
    """Where the secret lives: PhysLab's home (``$PHYSLAB_HOME``, else the user data folder)."""
    from physlab.problems.suites import user_data_dir

    return user_data_dir() / KEY_FILE


def _read_key(path: Path) -> bytes | None:
    """The secret, if the file is this user's own and nobody else may read it (one others can read
    could be used to seal a forged record)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        key = os.read(fd, 256).strip()
    finally:
        os.close(fd)
    return key if len(key) >= 32 else None


def machine_key(*, create: bool = False) -> bytes | None:
    """This machine's secret; None when there is none (and ``create`` is false, or PhysLab's home
    cannot be written: the records are then written without a seal)."""
    path = key_path()
    key = _read_key(path)
    if key is not None or not create:
        return key
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:  # another process made it meanwhile
        return _read_key(path)
    except OSError:
        return None
    try:
        os.write(fd, secrets.token_hex(32).encode())
    finally:
        os.close(fd)
    return _read_key(path)


def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in data.items() if k != FIELD}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode()


def _mac(key: bytes, data: dict[str, Any]) -> str:
    return _PREFIX + hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def sealed_json(data: dict[str, Any]) -> str:
    """``data`` (a record as JSON values) written as the file's text, with this machine's seal."""
    key = machine_key(create=True)
    body = {k: v for k, v in data.items() if k != FIELD}
    if key is not None:
        body[FIELD] = _mac(key, body)
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def is_sealed(raw: bytes | None) -> bool:
    """Whether a record file's bytes carry this machine's seal over exactly what they hold."""
    if raw is None:
        return False
    key = machine_key()
    if key is None:
        return False
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get(FIELD), str):
        return False
    return hmac.compare_digest(data[FIELD], _mac(key, data))
