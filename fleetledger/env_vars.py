"""Environment variables set for the duration of a block (a child process started inside it
inherits them)."""

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the duration, then restore the old values."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
