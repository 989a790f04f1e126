"""`[service].callers` in thoth.toml: added and removed with tomlkit, so the rest of the file
(comments, order, spacing) is kept; the result is validated as settings before it replaces the
file (atomically), and only a key's SHA-256 is ever written."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from thoth.config import CONFIG_FILE, CallerSettings, Settings, load_settings
from thoth.errors import ConfigError, Problem, RequestError
from thoth.service.callers import hash_key, new_key
from thoth.storage.files import fsync_dir, write_durably

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def add_caller(
    root: Path, name: str, labels: Sequence[str], *, curator: bool = False
) -> tuple[CallerSettings, str]:
    """Declare caller `name` with the label ceiling `labels` (and, with `curator`, the right to
    retire and merge memories); returns it and its new key (shown once: only the hash is
    stored)."""
    settings = load_settings(root)
    if not _NAME.match(name):
        raise RequestError(
            f"caller name {name!r} -> use lowercase letters, digits, '-' and '_' (max 64)"
        )
    if any(c.name == name for c in settings.service.callers):
        raise RequestError(
            f"caller {name} already exists -> remove it first (tht service remove-caller), "
            "which also revokes its key"
        )
    ceiling = list(dict.fromkeys(label.strip() for label in labels if label.strip()))
    vocabulary = settings.answers.labels
    unknown = [label for label in ceiling if label not in vocabulary]
    if not ceiling or unknown:
        raise RequestError(
            (f"unknown label(s) {', '.join(unknown)}" if unknown else "no labels given")
            + f" -> a caller's ceiling lists labels of [answers].labels: {', '.join(vocabulary)}",
            problems=[
                Problem("--labels", f"unknown label {label!r}", code="unknown_label")
                for label in unknown
            ],
        )
    key = new_key()
    caller = CallerSettings(name=name, key_sha256=hash_key(key), labels=ceiling, curator=curator)
    doc = _document(root)
    service = doc.get("service")
    if service is None:
        service = tomlkit.table()
        doc["service"] = service
    callers = service.get("callers")
    if callers is None:
        callers = tomlkit.aot()
        service["callers"] = callers
    entry = tomlkit.table()
    entry["name"] = caller.name
    entry["key_sha256"] = caller.key_sha256
    entry["labels"] = list(caller.labels)
    if caller.curator:
        entry["curator"] = True
    callers.append(entry)
    _write(root, doc)
    return caller, key


def remove_caller(root: Path, name: str) -> CallerSettings:
    """Remove caller `name` (its key stops working when the service restarts)."""
    settings = load_settings(root)
    found = [c for c in settings.service.callers if c.name == name]
    if not found:
        known = ", ".join(c.name for c in settings.service.callers) or "none"
        raise RequestError(f"no caller named {name} -> declared callers: {known}")
    doc = _document(root)
    callers = doc["service"]["callers"]
    index = next(i for i, c in enumerate(callers) if c.get("name") == name)
    del callers[index]
    if not callers:
        del doc["service"]["callers"]
    _write(root, doc)
    return found[0]


def _document(root: Path) -> Any:
    path = root / CONFIG_FILE
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}) -> fix the syntax") from exc


def _write(root: Path, doc: Any) -> None:
    """Validate the new text as settings, then replace the file atomically."""
    path = root / CONFIG_FILE
    text = tomlkit.dumps(doc)
    try:
        Settings.model_validate(tomlkit.parse(text).unwrap())
    except ValidationError as exc:  # a hand-edited [service] the new entry cannot join
        raise ConfigError(f"{path}: the callers would not be valid settings ({exc})") from exc
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_durably(tmp, text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
