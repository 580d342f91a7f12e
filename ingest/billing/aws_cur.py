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

import gzip
import hashlib
import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.aws_cur_legacy import json_string, legacy_name, map_columns
from ingest.core.common import ReadResult, parse_utc, quarantine_from
from ingest.core.errors import IngestError
from ingest.core.landing import CUR_COLUMNS, CUR_MAP_COLUMNS, empty_quarantine
from ingest.billing.s3 import (
    CLIENT_OPTIONS,
    SECRET_OPTIONS,
    LocalStore,
    ObjectInfo,
    ObjectStore,
    open_store,
)

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
_KNOWN = dict(CUR_COLUMNS)


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


def _gunzip(data: bytes, uri: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        raise IngestError(f"corrupt or truncated gzip data: {err}", file=uri) from None


def _unzip(data: bytes, uri: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if not n.endswith("/")]
            if len(names) != 1:
                raise IngestError(f"zip holds {len(names)} files, expected one CSV", file=uri)
            return z.read(names[0])
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as err:
        raise IngestError(f"corrupt or truncated zip data: {err}", file=uri) from None


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def parse_data_file(data: bytes, uri: str) -> tuple[pl.DataFrame, bool]:
    """A CUR data file's rows (every column as delivered) and whether they came as text."""
    name = uri.lower().split("?", 1)[0]
    if name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(pa.BufferReader(data))
        except Exception as err:  # pyarrow raises ArrowInvalid / OSError for damaged files
            raise IngestError(
                f"cannot read Parquet (truncated or corrupt?): {_first_line(err)}", file=uri
            ) from None
        return pl.from_arrow(table), False  # type: ignore[return-value]
    if name.endswith((".csv.gz", ".csv", ".gz", ".csv.zip", ".zip")):
        if data[:2] == b"\x1f\x8b":
            data = _gunzip(data, uri)
        elif data[:4] == b"PK\x03\x04":
            data = _unzip(data, uri)
        elif name.endswith((".gz", ".zip")):
            raise IngestError("not gzip or zip data (bad magic number)", file=uri)
        try:
            return pl.read_csv(data, infer_schema=False, raise_if_empty=False), True
        except Exception as err:  # polars parse errors
            raise IngestError(f"cannot parse CSV: {_first_line(err)}", file=uri) from None
    raise IngestError(f"manifest lists a file of unknown format: {uri}")


# --------------------------------------------------------------------------- normalisation


_TYPE_WORDS = {
    "double": pl.Float64,
    "float": pl.Float64,
    "decimal": pl.Float64,
    "bigdecimal": pl.Float64,
    "optionalbigdecimal": pl.Float64,
    "bigint": pl.Int64,
    "int": pl.Int64,
    "integer": pl.Int64,
    "timestamp": "ts",
    "datetime": "ts",
    "date": "ts",
}


def _manifest_columns(manifest: dict[str, Any], fmt: str) -> list[tuple[str, str]]:
    """(header as in the data file, declared type) of every column the manifest lists."""
    out: list[tuple[str, str]] = []
    for c in manifest.get("columns") or []:
        if not isinstance(c, dict) or "name" not in c:
            continue
        name = str(c["name"])
        if fmt == "legacy" and c.get("category"):
            name = f"{c['category']}/{name}"
        out.append((name, str(c.get("type", ""))))
    return out


def _manifest_types(columns: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, type_ in columns:
        t = type_.lower()
        target = _TYPE_WORDS.get(t)
        if target is None:
            for word, tgt in _TYPE_WORDS.items():
                if t.startswith(word):
                    target = tgt
                    break
        if target is not None:
            out[legacy_name(name) if "/" in name else name] = target
    return out


def _map_to_json(col: str, dtype: pl.DataType) -> pl.Expr:
    c = pl.col(col)
    if isinstance(dtype, pl.Map):  # polars >= 2 keeps Arrow maps as maps
        dtype = pl.List(pl.Struct({"key": dtype.key, "value": dtype.value}))
        c = c.cast(dtype)
    if isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
        fields = [f.name for f in dtype.inner.fields]
        key, value = (fields[0], fields[1]) if len(fields) >= 2 else ("key", "value")
        pairs = c.list.eval(
            pl.concat_str(
                json_string(pl.element().struct.field(key).cast(pl.String)),
                pl.lit(":"),
                json_string(pl.element().struct.field(value)),
            )
        )
        return pl.concat_str(pl.lit("{"), pairs.list.join(","), pl.lit("}")).alias(col)
    if isinstance(dtype, pl.Struct):
        return c.struct.json_encode().alias(col)
    return c.cast(pl.String).alias(col)


def _normalise(df: pl.DataFrame, text: bool, mtypes: dict[str, Any]) -> pl.DataFrame:
    """Cast to CUR types; adds `_reject`, the reason a row is quarantined (CSV cast failures)."""
    exprs: list[pl.Expr] = []
    checks: list[tuple[str, pl.Expr]] = []
    for name, dtype in df.schema.items():
        c = pl.col(name)
        if name in CUR_MAP_COLUMNS:
            exprs.append(_map_to_json(name, dtype))
            continue
        target: Any = None
        if name in _KNOWN:
            k = _KNOWN[name]
            target = (
                "ts"
                if str(k).startswith("timestamp")
                else (pl.Float64 if str(k) == "double" else pl.String)
            )
        elif text:
            target = mtypes.get(name)
        elif isinstance(dtype, pl.Datetime):
            target = "ts"
        elif isinstance(dtype, pl.Map):
            exprs.append(_map_to_json(name, dtype))
            continue
        if target is None:
            if isinstance(dtype, pl.Categorical | pl.Enum):
                exprs.append(c.cast(pl.String))
            continue
        if target == "ts":
            if isinstance(dtype, pl.Datetime):
                e = c.dt.replace_time_zone("UTC") if dtype.time_zone is None else c
                e = e.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
            elif isinstance(dtype, pl.Date):
                e = c.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
            else:
                s = c.cast(pl.String)
                e = parse_utc(pl.when(s.str.strip_chars() == "").then(None).otherwise(s))
                checks.append((name, s.str.strip_chars().ne("").fill_null(False) & e.is_null()))
            exprs.append(e.alias(name))
        elif target == pl.String:
            exprs.append(c.cast(pl.String))
        else:
            if dtype == pl.String:
                s = c.str.strip_chars()
                e = pl.when(s == "").then(None).otherwise(s).cast(target, strict=False)
                checks.append((name, s.ne("").fill_null(False) & e.is_null()))
            else:
                e = c.cast(target, strict=False)
            exprs.append(e.alias(name))
    reason: pl.Expr = pl.lit(None, pl.String)
    for name, bad in reversed(checks):
        reason = pl.when(bad).then(pl.lit(f"unparseable {name}")).otherwise(reason)
    # the checks read the input columns, so they are evaluated in the same step as the casts
    return df.with_columns(*exprs, reason.alias("_reject"))


def _check_columns(columns: list[str], expected: list[str], uri: str, manifest_uri: str) -> None:
    if expected:
        want = set(expected)
        have = set(columns)
        missing = [c for c in expected if c not in have]
        extra = [c for c in columns if c not in want]
        if missing or extra:
            detail = []
            if missing:
                detail.append(f"missing {', '.join(missing)}")
            if extra:
                detail.append(f"not in the manifest {', '.join(extra)}")
            raise IngestError(
                f"columns differ from the manifest {manifest_uri} (renamed or dropped column?): "
                + "; ".join(detail),
                file=uri,
            )


def _empty_rows() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "x_execution_id": pl.String,
            "x_billing_period": pl.String,
            "x_source": pl.String,
            "x_source_file": pl.String,
            "x_line_number": pl.Int64,
        }
    )


# --------------------------------------------------------------------------- reading


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
    columns = _manifest_columns(doc, m.format)
    expected = [c for c, _ in columns]
    mtypes = _manifest_types(columns)
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
        _check_columns(df.columns, expected, uri, m.uri)
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
        df = _normalise(df, text, mtypes)
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
    rows = pl.concat(frames, how="diagonal_relaxed") if frames else _empty_rows()
    outside = _rows_outside_period(rows, m.period)
    if outside:
        warnings.append(
            f"{outside} lines of {m.uri} have a billing period start outside {m.period}"
        )
    quarantine = pl.concat(rejected) if rejected else empty_quarantine()
    result = ReadResult(rows, quarantine, warnings=warnings, files=[m.uri, *uris])
    ledger = pl.concat(ledgers) if ledgers else ledger_of(pl.DataFrame(), "", m.period)
    return CurDelivery(m, delivery_id, result, uris, ledger)


_LEDGER_SCHEMA = {
    "x_source_file": pl.String,
    "x_line_number": pl.Int64,
    "period": pl.String,
    "currency": pl.String,
    "amount": pl.Float64,
}


def ledger_of(raw: pl.DataFrame, uri: str, period: str) -> pl.DataFrame:
    """Each row of a data file as read (before casts and quarantine): its line number, the
    manifest's period, its currency and its `TOTAL_BASIS` amount (null when the cell is not a
    number). The source side of `billing_source_totals`, independent of the landed rows."""
    if not raw.height:
        return pl.DataFrame(schema=_LEDGER_SCHEMA)
    cost = raw[TOTAL_BASIS] if TOTAL_BASIS in raw.columns else None
    if cost is None:
        amount = pl.Series("amount", [None] * raw.height, pl.Float64)
    elif cost.dtype == pl.String:
        stripped = cost.str.strip_chars()
        amount = stripped.cast(pl.Float64, strict=False)
    else:
        amount = cost.cast(pl.Float64, strict=False)
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
        schema=_LEDGER_SCHEMA,
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


def _num(rows: pl.DataFrame, name: str) -> pl.Expr:
    if name in rows.columns:
        return pl.col(name).cast(pl.Float64, strict=False)
    return pl.lit(None, pl.Float64)


def cost_expressions(rows: pl.DataFrame) -> dict[str, pl.Expr]:
    """Billed, effective (amortised) and list cost of each line, as `int_billing__aws.sql`
    computes them (the CUR query library's rules by line item type)."""
    line_type = (
        pl.col("line_item_line_item_type").cast(pl.String)
        if "line_item_line_item_type" in rows.columns
        else pl.lit(None, pl.String)
    )
    unblended = _num(rows, "line_item_unblended_cost")
    effective = (
        pl.when(line_type == "SavingsPlanCoveredUsage")
        .then(_num(rows, "savings_plan_savings_plan_effective_cost"))
        .when(line_type == "SavingsPlanRecurringFee")
        .then(
            _num(rows, "savings_plan_total_commitment_to_date")
            - _num(rows, "savings_plan_used_commitment")
        )
        .when(line_type.is_in(["SavingsPlanNegation", "SavingsPlanUpfrontFee"]))
        .then(pl.lit(0.0))
        .when(line_type == "DiscountedUsage")
        .then(_num(rows, "reservation_effective_cost"))
        .when(line_type == "RIFee")
        .then(
            _num(rows, "reservation_unused_amortized_upfront_fee_for_billing_period").fill_null(0)
            + _num(rows, "reservation_unused_recurring_fee").fill_null(0)
        )
        .otherwise(unblended)
    )
    return {
        "billed_cost": pl.coalesce(_num(rows, "line_item_net_unblended_cost"), unblended),
        "effective_cost": effective,
        "list_cost": pl.coalesce(_num(rows, "pricing_public_on_demand_cost"), unblended),
    }


def totals_by_service(rows: pl.DataFrame) -> pl.DataFrame:
    """Lines and billed / effective / list cost per service (`line_item_product_code`) and
    currency: what a delivery said, kept for `fct_billing_restatements`."""
    schema = {
        "service": pl.String,
        "currency": pl.String,
        "line_count": pl.Int64,
        "billed_cost": pl.Float64,
        "effective_cost": pl.Float64,
        "list_cost": pl.Float64,
    }
    if not rows.height:
        return pl.DataFrame(schema=schema)

    def text(name: str) -> pl.Expr:
        if name in rows.columns:
            return pl.col(name).cast(pl.String).fill_null("")
        return pl.lit("", pl.String)

    costs = cost_expressions(rows)
    return (
        rows.select(
            text("line_item_product_code").alias("service"),
            text("line_item_currency_code").alias("currency"),
            *(e.alias(k) for k, e in costs.items()),
        )
        .group_by("service", "currency")
        .agg(
            pl.len().cast(pl.Int64).alias("line_count"),
            pl.col("billed_cost").sum(),
            pl.col("effective_cost").sum(),
            pl.col("list_cost").sum(),
        )
        .sort("service", "currency")
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
    )
