"""Objects under a location, local or on S3, behind one small interface.

`open_store(location, options)` returns a store for `s3://bucket/prefix` (boto3) or a local folder
(the same layout as `aws s3 sync` leaves it). Keys are relative to the location and use `/`.

S3: bucket and prefix come from the location; `endpoint_url`, `region` and `profile` from the
source options. Credentials come only from the standard boto3 chain (environment, shared config and
credentials files, SSO, instance or container role): never from fleetledger.yml, and they are never
logged. Throttling (`SlowDown`, `Throttling`), 5xx answers and dropped connections are retried
by botocore with exponential backoff and jitter: source options `retry_mode` (`adaptive`, the
default, or `standard`) and `max_attempts` (every try of one request, the first included; default
8). A body that breaks off while it is read is fetched again, with backoff, up to `READ_ATTEMPTS`
times. A request that still fails raises `SourceUnavailable` naming the location, the last error
and the attempts.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ingest.core.errors import IngestError, SourceUnavailable

#: botocore tries of one request (the first included) unless the source's `max_attempts` says
MAX_ATTEMPTS = 8
RETRY_MODES = ("adaptive", "standard")
READ_ATTEMPTS = 4
#: source options that configure the S3 client
CLIENT_OPTIONS = ("endpoint_url", "region", "profile", "max_attempts", "retry_mode")
#: option names that would put a secret into the config: refused
SECRET_OPTIONS = (
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "access_key",
    "secret_key",
    "session_token",
)


@dataclass(frozen=True)
class ObjectInfo:
    """One object: key relative to the store root, a version tag (S3 ETag, or size+mtime for a
    local file) and when it was last written."""

    key: str
    etag: str
    last_modified: datetime
    size: int


class ObjectStore(Protocol):
    """Read-only access to the objects under one location."""

    root: str

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        """Every object whose key starts with `prefix`, sorted by key."""
        ...

    def read(self, key: str) -> bytes:
        """The object's bytes; IngestError naming the object when it is missing or unreadable."""
        ...

    def info(self, key: str) -> ObjectInfo | None:
        """The object's version tag and time, or None when it does not exist."""
        ...

    def uri(self, key: str) -> str:
        """A name of the object for messages and lineage (`s3://…` or a path)."""
        ...


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` → (`bucket`, `some/prefix`), without a trailing slash."""
    if not uri.startswith("s3://"):
        raise IngestError(f"not an s3:// location: {uri}")
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise IngestError(f"s3 location names no bucket: {uri}")
    return bucket, prefix.strip("/")


def _join(prefix: str, key: str) -> str:
    key = key.lstrip("/")
    return f"{prefix}/{key}" if prefix else key


class LocalStore:
    """A local folder as a store (keys are paths relative to it)."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root)
        self.root = str(self.path)

    def _info(self, p: Path) -> ObjectInfo:
        st = p.stat()
        tag = hashlib.sha1(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
        return ObjectInfo(
            key=p.relative_to(self.path).as_posix(),
            etag=tag,
            last_modified=datetime.fromtimestamp(st.st_mtime, tz=UTC),
            size=st.st_size,
        )

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        if not self.path.is_dir():
            return []
        base = self.path / prefix if prefix and (self.path / prefix).is_dir() else self.path
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.startswith("."):
                    continue
                info = self._info(Path(dirpath) / name)
                if info.key.startswith(prefix):
                    out.append(info)
        return sorted(out, key=lambda o: o.key)

    def read(self, key: str) -> bytes:
        p = self.path / key
        try:
            return p.read_bytes()
        except FileNotFoundError:
            raise IngestError("file does not exist", file=p) from None
        except OSError as err:
            raise IngestError(f"cannot read file: {err.strerror or err}", file=p) from None

    def info(self, key: str) -> ObjectInfo | None:
        p = self.path / key
        return self._info(p) if p.is_file() else None

    def uri(self, key: str) -> str:
        return str(self.path / key)


@functools.cache
def _data_loader() -> Any:
    """botocore's loader of service models, shared by the sessions of this process (each new
    session would parse the S3 model again); credentials are still resolved per session."""
    from botocore.loaders import create_loader

    return create_loader()


def retry_settings(options: dict[str, Any]) -> tuple[int, str]:
    """(`max_attempts`, `retry_mode`) from the source options, with their defaults; an
    IngestError naming the option when a value is not usable."""
    raw = options.get("max_attempts", MAX_ATTEMPTS)
    try:
        if isinstance(raw, bool):
            raise ValueError
        attempts = int(str(raw).strip())
    except ValueError:
        raise IngestError(f"option max_attempts: {raw!r} is not a whole number of tries") from None
    if attempts < 1:
        raise IngestError(f"option max_attempts: {attempts} (at least 1: the first try)")
    mode = str(options.get("retry_mode") or RETRY_MODES[0])
    if mode not in RETRY_MODES:
        raise IngestError(f"option retry_mode: {mode!r} is not one of {', '.join(RETRY_MODES)}")
    return attempts, mode


def s3_client(options: dict[str, Any]) -> Any:
    """A boto3 S3 client from the source options and the standard credential chain (a new
    session each time, so changed credentials are picked up)."""
    import boto3
    import botocore.session
    from botocore.config import Config as BotoConfig

    bad = [k for k in options if k.lower() in SECRET_OPTIONS]
    if bad:
        raise IngestError(
            f"options {bad}: credentials are not read from fleetledger.yml; use the standard "
            "AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, an instance "
            "or container role)"
        )
    attempts, mode = retry_settings(options)
    profile = options.get("profile")
    core = botocore.session.get_session()
    core.register_component("data_loader", _data_loader())  # service models parsed once
    session = boto3.session.Session(
        botocore_session=core, profile_name=str(profile) if profile else None
    )
    config = BotoConfig(
        # total_max_attempts counts the first try (botocore's max_attempts would not)
        retries={"total_max_attempts": attempts, "mode": mode},
        connect_timeout=10,
        read_timeout=60,
    )
    return session.client(
        "s3",
        region_name=str(options["region"]) if options.get("region") else None,
        endpoint_url=str(options["endpoint_url"]) if options.get("endpoint_url") else None,
        config=config,
    )


def _error_code(err: Exception) -> str:
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _backoff(attempt: int) -> float:
    return min(20.0, random.uniform(0, 0.5 * 2**attempt))


class S3Store:
    """Objects under `s3://bucket/prefix`."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        client: Any,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.root = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._sleep = sleep

    def _key(self, key: str) -> str:
        return _join(self.prefix, key)

    def _relative(self, full_key: str) -> str:
        if self.prefix and full_key.startswith(self.prefix + "/"):
            return full_key[len(self.prefix) + 1 :]
        return full_key

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._key(key)}"

    @property
    def max_attempts(self) -> int:
        """The tries botocore makes of one request (the client's retry config)."""
        config = getattr(getattr(self.client, "meta", None), "config", None)
        retries = getattr(config, "retries", None) or {}
        return int(retries.get("total_max_attempts") or MAX_ATTEMPTS)

    def _attempts(self, err: Exception) -> int:
        response = getattr(err, "response", None) or {}
        retried = (response.get("ResponseMetadata") or {}).get("RetryAttempts")
        return int(retried) + 1 if isinstance(retried, int) else self.max_attempts

    def _fail(self, err: Exception, what: str, attempts: int | None = None) -> SourceUnavailable:
        """The store could not be read: SourceUnavailable naming the location, the last error
        and how many times the request was tried."""
        from botocore.exceptions import NoCredentialsError

        if isinstance(err, NoCredentialsError):
            return SourceUnavailable(
                f"{what}: no AWS credentials found (standard chain: environment, AWS_PROFILE, "
                "shared credentials file, SSO, instance or container role)",
                attempts=1,
            )
        attempts = attempts or self._attempts(err)
        code = _error_code(err)
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        if code in ("NoSuchBucket",):
            problem = f"{what}: bucket {self.bucket} does not exist"
        elif code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            problem = f"{what}: access denied ({code})"
        else:
            problem = f"{what}: {msg}"
        tried = f" (tried {attempts} time{'s' if attempts != 1 else ''})"
        return SourceUnavailable(problem + tried, attempts=attempts)

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        from botocore.exceptions import BotoCoreError, ClientError

        full = self._key(prefix) if prefix else (self.prefix + "/" if self.prefix else "")
        out: list[ObjectInfo] = []
        try:
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
                for obj in page.get("Contents", []) or []:
                    out.append(
                        ObjectInfo(
                            key=self._relative(obj["Key"]),
                            etag=str(obj.get("ETag", "")).strip('"'),
                            last_modified=obj["LastModified"].astimezone(UTC),
                            size=int(obj.get("Size", 0)),
                        )
                    )
        except (BotoCoreError, ClientError) as err:
            raise self._fail(err, f"cannot list s3://{self.bucket}/{full}") from None
        return sorted(out, key=lambda o: o.key)

    def info(self, key: str) -> ObjectInfo | None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as err:
            if _error_code(err) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise self._fail(err, self.uri(key)) from None
        except BotoCoreError as err:
            raise self._fail(err, self.uri(key)) from None
        return ObjectInfo(
            key=key,
            etag=str(head.get("ETag", "")).strip('"'),
            last_modified=head["LastModified"].astimezone(UTC),
            size=int(head.get("ContentLength", 0)),
        )

    def read(self, key: str) -> bytes:
        """GetObject and read the body; a body cut off mid-stream is fetched again with backoff
        (botocore retries the request itself on throttling and 5xx)."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectionClosedError,
            IncompleteReadError,
            ReadTimeoutError,
            ResponseStreamingError,
        )

        transient = (
            ConnectionClosedError,
            IncompleteReadError,
            ReadTimeoutError,
            ResponseStreamingError,
        )
        uri = self.uri(key)
        for attempt in range(READ_ATTEMPTS):
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
                body = response["Body"]
                try:
                    return bytes(body.read())
                finally:
                    body.close()
            except ClientError as err:
                if _error_code(err) in ("NoSuchKey", "404", "NotFound"):
                    raise IngestError("object does not exist", file=uri) from None
                raise self._fail(err, uri) from None
            except transient as err:
                if attempt + 1 >= READ_ATTEMPTS:
                    raise self._fail(err, uri, attempts=READ_ATTEMPTS) from None
                self._sleep(_backoff(attempt))
            except BotoCoreError as err:
                raise self._fail(err, uri) from None
        raise AssertionError("unreachable")


def open_store(location: str, options: dict[str, Any] | None = None) -> ObjectStore:
    """The store for a location: `s3://bucket/prefix` or a local folder."""
    options = options or {}
    if location.startswith("s3://"):
        bucket, prefix = split_s3_uri(location)
        return S3Store(bucket, prefix, s3_client(options))
    if "://" in location:
        raise IngestError(f"unsupported location scheme (expected s3:// or a path): {location}")
    return LocalStore(Path(location))
