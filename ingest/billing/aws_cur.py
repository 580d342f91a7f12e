"""AWS Cost and Usage Report → `aws_cur_lines`, from S3 (boto3) or a local copy.

Formats (`options.format`: `auto` (default), `cur2` or `legacy`):
- CUR 2.0 (Data Exports): `location` is the export folder `s3://bucket/prefix/<export>` (or its
  local copy, as `aws s3 sync` leaves it) holding `data/` and `metadata/`. The manifest of a
  billing period is `metadata/BILLING_PERIOD=YYYY-MM/<export>-Manifest.json`, or one per
  execution folder below it ("create new" delivery; the newest is read). Its `dataFiles` (full
  `s3://` URIs) are read: Parquet or gzip CSV.
- Legacy CUR: `location` is the report folder `s3://bucket/<prefix>/<report>`. The manifest of a
  billing period is `<YYYYMMDD-YYYYMMDD>/<report>-Manifest.json` (it names the latest assembly;
  per-assembly manifests in `<YYYYMMDD-YYYYMMDD>/<assemblyId>/` are read only when it is missing),
  and its `reportKeys` are read (gzip or zip CSV, or Parquet). Legacy headers map onto the CUR 2.0
  names (`ingest.billing.aws_cur_legacy`), so both land in the same table.
- `auto`: CUR 2.0 when the location has `metadata/BILLING_PERIOD=…` manifests, else legacy.

The files a manifest lists are read; the location is listed only to find manifests. A data file
URI maps onto the location by the part after `/<export or report name>/` (or from `data/` or the
`YYYYMMDD-YYYYMMDD/` folder), so a copied bucket or local folder works too.

A data file whose columns differ from the manifest's `columns` (a renamed, missing or extra
column) fails the period, naming the file and the columns; so do a missing file, a truncated
Parquet or gzip file and an unreadable manifest. Nothing of a failed period is landed. Cells that
do not parse as their type (a cost that is not a number) are quarantined row by row.

Every column is kept; map columns (`resource_tags`, `cost_category`, `product`, `discount`) become
JSON object strings; the CUR columns named in FORMATS.md get their CUR 2.0 types. Added:
`x_execution_id` (CUR 2.0 `executionId`, legacy `assemblyId`), `x_billing_period` (`YYYY-MM`)
and lineage.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.aws_cur_files import (
    check_columns,
    empty_rows,
    manifest_columns,
    manifest_types,
    normalise,
    parse_data_file,
)
from ingest.billing.aws_cur_legacy import map_columns
from ingest.billing.s3 import (
    CLIENT_OPTIONS,
    SECRET_OPTIONS,
    LocalStore,
    ObjectInfo,
    ObjectStore,
    open_store,
)
from ingest.billing.totals import LEDGER_SCHEMA
from ingest.core.common import ReadResult, quarantine_from
from ingest.core.errors import IngestError
from ingest.core.landing import empty_quarantine

TABLE = "aws_cur_lines"
FORMATS = ("auto", "cur2", "legacy")
OPTIONS = ("format", "export_name", "report_name", *CLIENT_OPTIONS)
#: a data file must have this column (after legacy names are mapped)
REQUIRED_COLUMNS = ("line_item_unblended_cost",)
#: what the source totals (`billing_source_totals`) of a CUR period sum
TOTAL_BASIS = "line_item_unblended_cost"
TOTAL_CURRENCY = "line_item_currency_code"

_CUR2_MANIFEST = re.compile(r"^metadata/BILLING_PERIOD=(\d{4}-\d{2})/(?:.+/)?[^/]+-Manifest\.json$")
_LEGACY_MANIFEST = re.compile(r"^(\d{4})(\d{2})\d{2}-\d{8}/(?:([^/]+)/)?[^/]+-Manifest\.json$")
_LEGACY_PERIOD_DIR = re.compile(r"(?:^|/)(\d{8}-\d{8}/.+)$")


# --------------------------------------------------------------------------- manifests


@dataclass(frozen=True)
class Manifest:
    """A manifest object found under the location."""

    format: str  # cur2 | legacy
    period: str  # YYYY-MM
    key: str  # relative to the location
    uri: str
    etag: str
    last_modified: datetime
    top_level: bool = True  # legacy: directly in the period folder (not an assembly's copy)

    @property
    def version(self) -> str:
        """What changes when the manifest is delivered again."""
        return f"{self.etag}@{self.last_modified.isoformat()}"


@dataclass
class CurDelivery:
    """One billing period as one manifest delivered it: the rows read and what identifies it."""

    manifest: Manifest
    delivery_id: str  # executionId / assemblyId, else a hash of the manifest
    result: ReadResult
    data_files: list[str] = field(default_factory=list)
    #: each data file row's currency and amount (`TOTAL_BASIS`) as read from the file, before
    #: any cast or quarantine: `x_source_file`, `x_line_number`, `period`, `currency`, `amount`
    ledger: pl.DataFrame | None = None


def _check_options(options: dict[str, Any]) -> str:
    secret = sorted(k for k in options if k.lower() in SECRET_OPTIONS)
    if secret:
        raise IngestError(
            f"aws_cur options {secret}: credentials are not read from fleetledger.yml; use the "
            "standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, an "
            "instance or container role)"
        )
    unknown = sorted(k for k in options if k not in OPTIONS)
    if unknown:
        raise IngestError(f"aws_cur options {unknown} are not known (known: {', '.join(OPTIONS)})")
    fmt = str(options.get("format") or "auto")
    if fmt not in FORMATS:
        raise IngestError(f"aws_cur option format: {fmt!r} is not one of {', '.join(FORMATS)}")
    return fmt


def _cur2_manifests(store: ObjectStore, objects: Iterable[ObjectInfo]) -> list[Manifest]:
    out = []
    for o in objects:
        m = _CUR2_MANIFEST.match(o.key)
        if m:
            out.append(
                Manifest("cur2", m.group(1), o.key, store.uri(o.key), o.etag, o.last_modified)
            )
    return out


def _legacy_manifests(store: ObjectStore, objects: Iterable[ObjectInfo]) -> list[Manifest]:
    out = []
    for o in objects:
        m = _LEGACY_MANIFEST.match(o.key)
        if m:
            out.append(
                Manifest(
                    "legacy",
                    f"{m.group(1)}-{m.group(2)}",
                    o.key,
                    store.uri(o.key),
                    o.etag,
                    o.last_modified,
                    top_level=m.group(3) is None,
                )
            )
    return out


def find_manifests(store: ObjectStore, fmt: str = "auto") -> list[Manifest]:
    """Every CUR manifest under the store's root (all of them, not only the latest per period)."""
    found: list[Manifest] = []
    if fmt in ("auto", "cur2"):
        found = _cur2_manifests(store, store.list("metadata/"))
    if not found and fmt in ("auto", "legacy"):
        found = _legacy_manifests(store, store.list(""))
    return sorted(found, key=lambda m: (m.period, m.key))


def latest_by_period(manifests: list[Manifest]) -> dict[str, tuple[Manifest, list[str]]]:
    """The manifest to read for each period, with a warning when there was a choice: CUR 2.0 the
    newest; legacy the top-level one (it names the latest assembly), else the newest."""
    by_period: dict[str, list[Manifest]] = {}
    for m in manifests:
        by_period.setdefault(m.period, []).append(m)
    out: dict[str, tuple[Manifest, list[str]]] = {}
    for period, ms in sorted(by_period.items()):
        top = [m for m in ms if m.top_level]
        pool = top or ms
        chosen = max(pool, key=lambda m: (m.last_modified, m.key))
        warnings = []
        if len(pool) > 1:
            warnings.append(f"period {period}: {len(pool)} manifests, read the newest {chosen.uri}")
        out[period] = (chosen, warnings)
    return out


# --------------------------------------------------------------------------- data files


def data_key(uri: str, store: ObjectStore, name: str) -> str:
    """The key (relative to the store) of a data file the manifest names by URI or bucket key."""
    key = uri
    if "://" in uri:
        rest = uri.split("://", 1)[1]
        key = rest.split("/", 1)[1] if "/" in rest else ""
    key = key.lstrip("/")
    prefix = getattr(store, "prefix", None)
    if prefix and key.startswith(prefix + "/"):
        return key[len(prefix) + 1 :]
    slashed = "/" + key
    if name:
        pos = slashed.rfind(f"/{name}/")
        if pos >= 0:
            rest = slashed[pos + len(name) + 2 :]
            if rest.startswith(("data/", "metadata/")) or _LEGACY_PERIOD_DIR.match(rest):
                return rest
    pos = slashed.find("/data/")
    if pos >= 0:
        return slashed[pos + 1 :]
    m = _LEGACY_PERIOD_DIR.search(key)
    if m:
        return m.group(1)
    return key


def local_path(folder: Path, uri: str, export_name: str) -> Path:
    """Map a manifest data file URI to the local copy of the export folder."""
    return folder / data_key(uri, LocalStore(folder), export_name)


def _load_manifest(store: ObjectStore, m: Manifest) -> dict[str, Any]:
    raw = store.read(m.key)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise IngestError(f"manifest is not UTF-8 text: {err}", file=m.uri) from None
    except json.JSONDecodeError as err:
        raise IngestError(
            f"manifest is not valid JSON: {err.msg}", file=m.uri, line=err.lineno
        ) from None
    if not isinstance(doc, dict):
        raise IngestError("manifest is not a JSON object", file=m.uri)
    return doc


def read_delivery(store: ObjectStore, m: Manifest, *, source: str, name: str = "") -> CurDelivery:
    """Read every data file one manifest lists. `name` is the export (CUR 2.0) or report
    (legacy) name, used to map data file URIs onto the store."""
    doc = _load_manifest(store, m)
    list_field = "dataFiles" if m.format == "cur2" else "reportKeys"
    files = doc.get(list_field)
    if not isinstance(files, list):
        raise IngestError(f"manifest has no {list_field} list", file=m.uri)
    id_field = "executionId" if m.format == "cur2" else "assemblyId"
    delivery_id = str(doc.get(id_field) or "") or (
        "manifest-" + hashlib.sha1(f"{m.uri}|{m.version}".encode()).hexdigest()[:16]
    )
    name = name or str(doc.get("exportName") or doc.get("reportName") or "")
    columns = manifest_columns(doc, m.format)
    expected = [c for c, _ in columns]
    mtypes = manifest_types(columns)
    frames: list[pl.DataFrame] = []
    rejected: list[pl.DataFrame] = []
    ledgers: list[pl.DataFrame] = []
    warnings: list[str] = []
    uris: list[str] = []
    for entry in files:
        key = data_key(str(entry), store, name)
        uri = store.uri(key)
        try:
            data = store.read(key)
        except IngestError:
            if store.info(key) is None:
                where = "" if str(entry) == uri else f" (read as {uri})"
                raise IngestError(
                    f"manifest lists {entry}{where}, which does not exist", file=m.uri
                ) from None
            raise
        df, text = parse_data_file(data, uri)
        if not df.width:
            raise IngestError("data file is empty (no header line)", file=uri)
        check_columns(df.columns, expected, uri, m.uri)
        df, mapped = map_columns(df, uri)
        warnings.extend(mapped)
        missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
        if missing:
            raise IngestError(
                f"no {', '.join(missing)} column (renamed?); columns are "
                + ", ".join(df.columns[:12])
                + (" …" if df.width > 12 else ""),
                file=uri,
            )
        uris.append(uri)
        ledgers.append(ledger_of(df, uri, m.period))
        df = normalise(df, text, mtypes)
        df = df.with_columns(
            x_execution_id=pl.lit(delivery_id, pl.String),
            x_billing_period=pl.lit(m.period, pl.String),
            x_source=pl.lit(source, pl.String),
            x_source_file=pl.lit(uri, pl.String),
            x_line_number=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
        )
        bad = df.filter(pl.col("_reject").is_not_null())
        if bad.height:
            raw_cols = [c for c in df.columns if not c.startswith(("x_", "_"))]
            raw = pl.concat_str(
                [pl.col(c).cast(pl.String).fill_null("") for c in raw_cols], separator=","
            )
            rejected.append(quarantine_from(bad, pl.col("_reject"), raw))
        frames.append(df.filter(pl.col("_reject").is_null()).drop("_reject"))
    rows = pl.concat(frames, how="diagonal_relaxed") if frames else empty_rows()
    outside = _rows_outside_period(rows, m.period)
    if outside:
        warnings.append(
            f"{outside} lines of {m.uri} have a billing period start outside {m.period}"
        )
    quarantine = pl.concat(rejected) if rejected else empty_quarantine()
    result = ReadResult(rows, quarantine, warnings=warnings, files=[m.uri, *uris])
    ledger = pl.concat(ledgers) if ledgers else ledger_of(pl.DataFrame(), "", m.period)
    return CurDelivery(m, delivery_id, result, uris, ledger)


def ledger_of(raw: pl.DataFrame, uri: str, period: str) -> pl.DataFrame:
    """Each row of a data file as read (before casts and quarantine): its line number, the
    manifest's period, its currency and its `TOTAL_BASIS` amount (null when the cell is not a
    number). The source side of `billing_source_totals`, independent of the landed rows."""
    if not raw.height:
        return pl.DataFrame(schema=LEDGER_SCHEMA)
    cost = raw[TOTAL_BASIS] if TOTAL_BASIS in raw.columns else None
    if cost is None:
        amount = pl.Series("amount", [None] * raw.height, pl.Float64)
    elif cost.dtype == pl.String:
        stripped = cost.str.strip_chars()
        amount = stripped.cast(pl.Float64, strict=False)
    else:
        amount = cost.cast(pl.Float64, strict=False)
    # NaN and inf are no amount: the row counts as unreadable, not as a NaN total
    amount = amount.set(~amount.is_finite().fill_null(False), None)  # type: ignore[arg-type]
    currency = (
        raw[TOTAL_CURRENCY].cast(pl.String)
        if TOTAL_CURRENCY in raw.columns
        else pl.Series([None] * raw.height, dtype=pl.String)
    )
    return pl.DataFrame(
        {
            "x_source_file": [uri] * raw.height,
            "x_line_number": range(1, raw.height + 1),
            "period": [period] * raw.height,
            "currency": currency,
            "amount": amount,
        },
        schema=LEDGER_SCHEMA,
    )


def _rows_outside_period(rows: pl.DataFrame, period: str) -> int:
    col = "bill_billing_period_start_date"
    if col not in rows.columns or not rows.height:
        return 0
    return rows.filter(pl.col(col).dt.strftime("%Y-%m") != period).height


class CurExport:
    """A CUR export (CUR 2.0) or report (legacy) at a location: its manifests, and the latest
    delivery of each billing period."""

    def __init__(self, location: str | Path, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        self.format = _check_options(options)
        self.location = str(location)
        if "://" not in self.location and not Path(self.location).is_dir():
            raise IngestError("CUR export folder does not exist", file=self.location)
        self.store = open_store(self.location, options)
        root = self.location.rstrip("/")
        default_name = root.rsplit("/", 1)[-1]
        self.name = str(options.get("export_name") or options.get("report_name") or default_name)

    def manifests(self) -> list[Manifest]:
        return find_manifests(self.store, self.format)

    def latest(self) -> dict[str, tuple[Manifest, list[str]]]:
        """Period → (manifest to read, warnings). IngestError when the location holds no
        manifest at all (a wrong bucket, prefix or export name)."""
        found = self.manifests()
        if not found:
            raise IngestError(
                "no CUR manifests found (expected metadata/BILLING_PERIOD=YYYY-MM/"
                "<export>-Manifest.json for CUR 2.0, or <YYYYMMDD-YYYYMMDD>/<report>-Manifest.json"
                " for legacy CUR)",
                file=self.store.root,
            )
        return latest_by_period(found)

    def read(self, m: Manifest, *, source: str) -> CurDelivery:
        return read_delivery(self.store, m, source=source, name=self.name)


def read_cur_export(
    location: str | Path,
    *,
    source: str,
    periods: Iterable[str] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, ReadResult]:
    """Read a CUR export: one ReadResult per billing period (`YYYY-MM`), limited to `periods`
    when given; each from the latest manifest of the period."""
    export = CurExport(location, options)
    wanted = set(periods) if periods is not None else None
    out: dict[str, ReadResult] = {}
    for period, (manifest, warnings) in export.latest().items():
        if wanted is not None and period not in wanted:
            continue
        delivery = export.read(manifest, source=source)
        delivery.result.warnings[:0] = warnings
        out[period] = delivery.result
    return out


# --------------------------------------------------------------------------- totals
