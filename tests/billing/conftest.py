"""Fixtures for the billing tests.

AWS: a moto S3 server over HTTP on 127.0.0.1 and a free port (boto3 talks to it as to S3: no
in-process patching), with dummy credentials in the environment (the standard chain) and no
shared AWS config or credentials files.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`http://127.0.0.1:<port>` of a moto server running for the session."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise

    nowhere = tmp_path_factory.mktemp("aws-config") / "none"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(nowhere),
        "AWS_SHARED_CREDENTIALS_FILE": str(nowhere),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    dropped = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
    saved = {k: os.environ.get(k) for k in (*env, *dropped)}
    os.environ.update(env)
    for k in dropped:
        os.environ.pop(k, None)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def s3(moto_endpoint: str) -> Any:
    """A boto3 S3 client for the moto server."""
    import boto3

    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture(scope="session")
def aws_samples(samples: Path) -> Path:
    """shared/samples/aws-cur (the real CUR files the readers must handle)."""
    if not (samples / "aws-cur").is_dir():
        pytest.skip("shared/samples/aws-cur is not available")
    return samples / "aws-cur"
