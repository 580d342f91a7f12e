"""One run at a time per `$FLEETLEDGER_HOME`: an fcntl lock held for the whole run.

Two runs on one home would write the same build warehouse and landing partitions. `home_lock`
takes an exclusive `flock` on `$FLEETLEDGER_HOME/.fleetledger-run.lock` and writes who holds it
(pid, host, start, command) into the file; a second run waits up to `timeout` seconds, then
raises `HomeLocked` naming the holder (`fleetledger run` exits with status 75). The kernel
releases the lock when the holding process ends, however it ends, so a killed run never leaves
a stale lock behind. The lock is re-entrant within a process (the dbt asset takes it too, for
runs that `dagster dev` launches), and the dbt child inherits the descriptor
(`held_lock_fds`), so the home stays locked until dbt itself has exited.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = ".fleetledger-run.lock"
_POLL_S = 0.2
#: lock paths this process holds, and how many times; the descriptor of each
_held: dict[Path, int] = {}
_fds: dict[Path, int] = {}


class HomeLocked(RuntimeError):
    """Another run holds the home's lock (exit status 75)."""

    def __init__(self, message: str, holder: dict[str, object]) -> None:
        super().__init__(message)
        self.holder = holder


def lock_path(home: Path) -> Path:
    return Path(home).resolve() / LOCK_FILE


def read_holder(home: Path) -> dict[str, object]:
    """Who holds (or last held) the lock: pid, host, started_at, command; {} when unknown."""
    try:
        text = lock_path(home).read_text()
        holder = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict[str, object]) -> str:
    if not holder:
        return "a process that has not said who it is yet"
    return (
        f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, since "
        f"{holder.get('started_at', '?')}: {holder.get('command', '?')}"
    )


@contextmanager
def home_lock(home: Path, timeout: float = 0.0) -> Iterator[Path]:
    """Hold the home's run lock for the duration; wait up to `timeout` seconds for it."""
    path = lock_path(home)
    if _held.get(path):
        _held[path] += 1
        try:
            yield path
        finally:
            _held[path] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = read_holder(home)
                    waited = f" (waited {timeout:g} s)" if timeout > 0 else ""
                    raise HomeLocked(
                        f"{Path(home).resolve()} is in use by another fleetledger run "
                        f"({_describe(holder)}){waited}; let it finish, or wait for it with "
                        "--lock-timeout SEC (lock file "
                        f"{path})",
                        holder,
                    ) from None
                time.sleep(_POLL_S)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": " ".join(sys.argv) or sys.executable,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        _held[path] = 1
        _fds[path] = fd
        try:
            yield path
        finally:
            _held.pop(path, None)
            _fds.pop(path, None)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def held_lock_fds() -> tuple[int, ...]:
    """The descriptors of the locks this process holds (passed on to the dbt child)."""
    return tuple(_fds.values())
