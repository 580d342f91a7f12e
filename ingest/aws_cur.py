"""AWS CUR 2.0 (Data Exports) from a local copy of the export folder → `aws_cur_lines`.

`location` is the export folder (as `aws s3 sync` leaves it), holding `data/` and `metadata/`.
For each billing period the manifest `metadata/BILLING_PERIOD=YYYY-MM/...-Manifest.json` lists
the data files (`dataFiles`, full `s3://` URIs); those files are read (never a listing of
`data/`), mapped to the local folder by the part of the key after `/<export name>/`.

Every column is kept; the map columns `resource_tags`, `cost_category`, `product`, `discount`
become JSON object strings; the CUR columns named in FORMATS.md get their CUR 2.0 types
(strings, doubles, timestamps in UTC). `x_execution_id` (manifest `executionId`),
`x_billing_period` (`YYYY-MM`) and lineage are added.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from ingest.common import ReadResult, parse_utc, quarantine_from, read_bytes
from ingest.errors import IngestError
from ingest.landing import CUR_COLUMNS, CUR_MAP_COLUMNS, empty_quarantine

TABLE = "aws_cur_lines"
_PERIOD_DIR = re.compile(r"^BILLING_PERIOD=(\d{4}-\d{2})$")
_KNOWN = dict(CUR_COLUMNS)


def _json_string(expr: pl.Expr) -> pl.Expr:
    """A JSON-encoded string of each value (properly escaped), via polars' struct encoder."""
    return pl.struct(expr.alias("v")).struct.json_encode().str.slice(5).str.head(-1)


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
                _json_string(pl.element().struct.field(key).cast(pl.String)),
                pl.lit(":"),
                _json_string(pl.element().struct.field(value)),
            )
        )
        return pl.concat_str(pl.lit("{"), pairs.list.join(","), pl.lit("}")).alias(col)
    if isinstance(dtype, pl.Struct):
        return c.struct.json_encode().alias(col)
    return c.cast(pl.String).alias(col)


def _manifests(folder: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    meta = folder / "metadata"
    if not meta.is_dir():
        return found
    for period_dir in sorted(meta.iterdir()):
        m = _PERIOD_DIR.match(period_dir.name)
        if not m or not period_dir.is_dir():
            continue
        files = sorted(period_dir.rglob("*-Manifest.json"))
        if files:
            found[m.group(1)] = files
    return found


def local_path(folder: Path, uri: str, export_name: str) -> Path:
    """Map a manifest data file URI to the local copy of the export folder."""
    key = uri
    if "://" in uri:
        rest = uri.split("://", 1)[1]
        key = rest.split("/", 1)[1] if "/" in rest else ""
    key = "/" + key.lstrip("/")
    marker = f"/{export_name}/"
    pos = key.rfind(marker)
    if pos >= 0:
        return folder / key[pos + len(marker) :]
    pos = key.find("/data/")
    if pos >= 0:
        return folder / key[pos + 1 :]
    return folder / key.lstrip("/")


def _read_data_file(path: Path, manifest: Path) -> tuple[pl.DataFrame, bool]:
    """The file's rows and whether they came as text (CSV)."""
    name = path.name.lower()
    try:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            return pl.from_arrow(pq.read_table(path)), False  # type: ignore[return-value]
        if name.endswith((".csv.gz", ".csv")):
            data = read_bytes(path)
            return pl.read_csv(data, infer_schema=False, raise_if_empty=False), True
    except IngestError:
        raise
    except Exception as err:  # pyarrow / polars parse errors
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise IngestError(f"cannot read CUR data file: {msg}", file=path) from None
    raise IngestError(f"manifest lists a file of unknown format: {path.name}", file=manifest)


_TYPE_WORDS = {
    "double": pl.Float64,
    "float": pl.Float64,
    "decimal": pl.Float64,
    "bigint": pl.Int64,
    "int": pl.Int64,
    "integer": pl.Int64,
    "timestamp": "ts",
    "date": "ts",
}


def _manifest_types(manifest: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in manifest.get("columns") or []:
        if isinstance(c, dict) and "name" in c:
            t = str(c.get("type", "")).lower()
            for word, target in _TYPE_WORDS.items():
                if t.startswith(word):
                    out[str(c["name"])] = target
                    break
    return out


def _normalise(
    df: pl.DataFrame, text: bool, mtypes: dict[str, Any]
) -> tuple[pl.DataFrame, pl.Expr]:
    """Cast to CUR types; returns the frame and a reject-reason expression (CSV cast failures)."""
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


def read_manifest(
    manifest_path: Path, folder: Path, *, source: str, period: str, export_name: str
) -> ReadResult:
    """Read every data file one manifest lists."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise IngestError(f"cannot read manifest: {err}", file=manifest_path) from None
    except json.JSONDecodeError as err:
        raise IngestError(
            f"manifest is not valid JSON: {err.msg}", file=manifest_path, line=err.lineno
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("dataFiles"), list):
        raise IngestError("manifest has no dataFiles list", file=manifest_path)
    execution_id = manifest.get("executionId")
    mtypes = _manifest_types(manifest)
    frames: list[pl.DataFrame] = []
    rejected: list[pl.DataFrame] = []
    files: list[str] = []
    for uri in manifest["dataFiles"]:
        path = local_path(folder, str(uri), export_name)
        if not path.is_file():
            raise IngestError(
                f"manifest lists {uri} but the local copy {path} does not exist",
                file=manifest_path,
            )
        df, text = _read_data_file(path, manifest_path)
        files.append(str(path))
        df = _normalise(df, text, mtypes)
        df = df.with_columns(
            x_execution_id=pl.lit(execution_id, pl.String),
            x_billing_period=pl.lit(period, pl.String),
            x_source=pl.lit(source, pl.String),
            x_source_file=pl.lit(str(path), pl.String),
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
    rows = (
        pl.concat(frames, how="diagonal_relaxed")
        if frames
        else pl.DataFrame(
            schema={
                "x_execution_id": pl.String,
                "x_billing_period": pl.String,
                "x_source": pl.String,
                "x_source_file": pl.String,
                "x_line_number": pl.Int64,
            }
        )
    )
    quarantine = pl.concat(rejected) if rejected else empty_quarantine()
    return ReadResult(rows, quarantine, files=[str(manifest_path), *files])


def read_cur_export(
    location: str | Path,
    *,
    source: str,
    periods: Iterable[str] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, ReadResult]:
    """Read a CUR 2.0 export folder: one ReadResult per billing period (`YYYY-MM`), limited to
    `periods` when given. Where a period has several manifests (execution folders), the newest
    (by file time) is read and a warning says so."""
    options = options or {}
    folder = Path(location)
    if not folder.is_dir():
        raise IngestError("CUR export folder does not exist", file=folder)
    export_name = str(options.get("export_name") or folder.name)
    wanted = set(periods) if periods is not None else None
    out: dict[str, ReadResult] = {}
    for period, manifests in _manifests(folder).items():
        if wanted is not None and period not in wanted:
            continue
        warnings = []
        manifest = manifests[0]
        if len(manifests) > 1:
            manifest = max(manifests, key=lambda p: (p.stat().st_mtime, str(p)))
            warnings.append(
                f"period {period}: {len(manifests)} manifests, read the newest {manifest}"
            )
        result = read_manifest(
            manifest, folder, source=source, period=period, export_name=export_name
        )
        result.warnings.extend(warnings)
        out[period] = result
    return out
