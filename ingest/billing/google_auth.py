"""Credentials of the Google API clients (BigQuery billing export, Cloud Billing Catalog) from a
source's options: `anonymous: true` (a local fake or an open endpoint), `credentials_file` (a
service-account key), else None: the library's default chain (GOOGLE_APPLICATION_CREDENTIALS,
the metadata server)."""

from __future__ import annotations

from typing import Any

from ingest.core.errors import IngestError


def google_credentials(options: dict[str, Any]) -> Any:
    if options.get("anonymous"):
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    if options.get("credentials_file"):
        from google.oauth2 import service_account

        try:
            return service_account.Credentials.from_service_account_file(
                str(options["credentials_file"])
            )
        except (OSError, ValueError) as err:
            raise IngestError(
                f"cannot read the service-account key: {err}", file=options["credentials_file"]
            ) from None
    return None
