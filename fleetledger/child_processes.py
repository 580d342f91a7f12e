"""The dbt processes a run starts stop when the run stops (issue: dbt kept writing the build
warehouse after its parent was killed, while a rerun wrote the same file).

- `children_die_with_parent(module)`: while dagster-dbt starts dbt (`DbtCliResource.cli`),
  `subprocess.Popen` in that module starts the child with `PR_SET_PDEATHSIG` (Linux): the
  kernel sends it SIGKILL when the thread that started it ends, including a `kill -9` of the
  run. Each child is also registered here, and inherits the home's run lock descriptor, so the
  home stays locked until the child has exited.
- `stop_children()`: SIGINT to every registered child still running (dbt cancels its queries),
  then SIGKILL after a grace period.
- `stop_children_on_sigterm()`: while it is active (the dbt step, in the main thread), SIGTERM
  stops the children and raises `RunInterrupted`; Ctrl-C reaches dbt through the terminal's
  process group and Dagster forwards it as well.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from fleetledger.run_lock import held_lock_fds

PR_SET_PDEATHSIG = 1
GRACE_S = 10.0
_children: list[subprocess.Popen[Any]] = []
_lock = threading.Lock()
#: the signal that interrupted the run, once one did (`interruption`)
_interrupted: list[str] = []


class RunInterrupted(Exception):
    """The run was stopped by a signal; its dbt child was stopped, nothing was published."""


def _pdeathsig(parent: int) -> Callable[[], None]:
    def preexec() -> None:  # runs in the child, between fork and exec
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def register(proc: subprocess.Popen[Any]) -> None:
    with _lock:
        _children[:] = [p for p in _children if p.poll() is None]
        _children.append(proc)


def running_children() -> list[subprocess.Popen[Any]]:
    with _lock:
        return [p for p in _children if p.poll() is None]


def stop_children(grace_s: float = GRACE_S) -> list[int]:
    """Stop every registered child still running: SIGINT, then SIGKILL after `grace_s`.
    Returns the pids stopped."""
    procs = running_children()
    for p in procs:
        try:
            p.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return [p.pid for p in procs]


class _Subprocess:
    """`subprocess` as a module sees it while `children_die_with_parent` is active."""

    def __init__(self, parent: int, cwd: str | None = None) -> None:
        self._parent = parent
        self._cwd = cwd

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802
        if sys.platform.startswith("linux") and kwargs.get("preexec_fn") is None:
            kwargs["preexec_fn"] = _pdeathsig(self._parent)
        # the child holds the run lock too: the home stays locked until it has exited
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), *held_lock_fds())
        if self._cwd is not None:
            kwargs["cwd"] = self._cwd
        proc = subprocess.Popen(*args, **kwargs)
        register(proc)
        return proc


@contextmanager
def children_die_with_parent(module: ModuleType, cwd: Path | None = None) -> Iterator[None]:
    """While active, the processes `module` starts with `subprocess.Popen` die with this one
    and are registered for `stop_children` (the module's global `subprocess` is swapped);
    with `cwd`, they start in that folder."""
    original = getattr(module, "subprocess", None)
    if original is not subprocess:
        raise RuntimeError(f"{module.__name__} does not use subprocess.Popen as expected")
    where = None if cwd is None else str(cwd)
    module.subprocess = _Subprocess(os.getpid(), where)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module.subprocess = original  # type: ignore[attr-defined]


@contextmanager
def stop_children_on_sigterm() -> Iterator[None]:
    """SIGTERM stops the registered children and raises `RunInterrupted` (main thread only;
    elsewhere a no-op: signal handlers can only be set there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signo: int, _frame: FrameType | None) -> None:
        stopped = stop_children()
        what = signal.Signals(signo).name
        if stopped:
            what += f": stopped dbt (pid {', '.join(map(str, stopped))})"
        _interrupted.append(what)
        raise RunInterrupted(what)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interruption() -> str | None:
    """What interrupted the run (`SIGTERM: stopped dbt (pid …)`), None when nothing did."""
    return _interrupted[-1] if _interrupted else None


def clear_interruption() -> None:
    _interrupted.clear()
