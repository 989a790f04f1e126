"""Files on disk: append-only JSONL logs, advisory file locks and durable (fsynced, atomic)
writes. Imports nothing from thoth but its errors."""

from thoth.storage.files import (
    append_durably,
    apply_changes,
    fsync_dir,
    fsync_path,
    write_durably,
)
from thoth.storage.jsonl import (
    JsonlLog,
    LineIssue,
    LineRejected,
    LogWriter,
    check_utc_timestamp,
    utc_now,
    validation_problems,
)
from thoth.storage.locks import file_lock

__all__ = [
    "JsonlLog",
    "LineIssue",
    "LineRejected",
    "LogWriter",
    "append_durably",
    "apply_changes",
    "check_utc_timestamp",
    "file_lock",
    "fsync_dir",
    "fsync_path",
    "utc_now",
    "validation_problems",
    "write_durably",
]
