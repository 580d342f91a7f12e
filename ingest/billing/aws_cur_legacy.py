"""Legacy CUR headers (`lineItem/UsageStartDate`, `resourceTags/user:team`) and the snake_case
Athena variant (`resource_tags_user_team`), mapped onto the CUR 2.0 column names of
`aws_cur_lines`.

Rules (the ones AWS uses for its Athena/CUR 2.0 names):
- `category/Name` → `category_name` in snake_case, an underscore before every capital:
  `lineItem/UsageStartDate` → `line_item_usage_start_date`,
  `savingsPlan/SavingsPlanARN` → `savings_plan_savings_plan_a_r_n`,
  `pricing/publicOnDemandCost` → `pricing_public_on_demand_cost`. A few spellings seen in real
  files are aliased (`savingsPlan/SavingsPlanArn` → `savings_plan_savings_plan_a_r_n`).
- `resourceTags/<key>` columns become one JSON object `resource_tags` with snake_case keys
  (`resourceTags/user:team` → `{"user_team": …}`), as the CUR 2.0 map column; empty cells are
  no tag. `costCategory/<name>` columns likewise become `cost_category`.
- Athena snake_case files: `resource_tags_<key>` / `cost_category_<name>` columns fold the same way
  (only when the file has no `resource_tags` / `cost_category` column of its own).
- A header cell with more than one `/` (a delimiter lost in the export) is kept, mapped by the same
  rule, and reported as a warning naming the file and column.
"""

from __future__ import annotations

import json
import re

import polars as pl

_CAPITAL = re.compile(r"([A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

#: spellings of legacy columns whose mechanical snake_case name differs from the CUR 2.0 name
ALIASES = {
    "savings_plan_savings_plan_arn": "savings_plan_savings_plan_a_r_n",
    "reservation_reservation_arn": "reservation_reservation_a_r_n",
}
_FOLDED = {"resource_tags": "resource_tags", "cost_category": "cost_category"}


def snake(name: str) -> str:
    """The Athena / CUR 2.0 snake_case form of a legacy header or tag key."""
    s = _CAPITAL.sub(r"_\1", name).lower()
    return _NON_ALNUM.sub("_", s).strip("_")


def legacy_name(header: str) -> str:
    """The `aws_cur_lines` column for a legacy `category/Name` header cell."""
    name = snake(header)
    return ALIASES.get(name, name)


def json_string(expr: pl.Expr) -> pl.Expr:
    """A JSON-encoded string of each value (properly escaped), via polars' struct encoder."""
    return pl.struct(expr.alias("v")).struct.json_encode().str.slice(5).str.head(-1)


def _json_object(pairs: list[tuple[str, list[str]]]) -> pl.Expr:
    """`{"key": value, …}` from string columns; per key the first non-empty column wins, and
    empty or null cells are left out. No pairs: `{}`."""
    if not pairs:
        return pl.lit("{}")
    items = []
    for key, cols in pairs:
        values = [
            pl.when(pl.col(c).cast(pl.String).str.strip_chars() != "").then(
                pl.col(c).cast(pl.String)
            )
            for c in cols
        ]
        value = pl.coalesce(values) if len(values) > 1 else values[0]
        items.append(
            pl.when(value.is_not_null()).then(
                pl.concat_str(pl.lit(json.dumps(key) + ":"), json_string(value))
            )
        )
    joined = pl.concat_list(items).list.drop_nulls().list.join(",")
    return pl.concat_str(pl.lit("{"), joined, pl.lit("}"))


def is_legacy_header(columns: list[str]) -> bool:
    return any("/" in c for c in columns)


def map_columns(df: pl.DataFrame, file: str) -> tuple[pl.DataFrame, list[str]]:
    """Rename legacy (slash) headers to CUR 2.0 names and fold tag / cost category columns into
    JSON objects; snake_case (Athena) files only get the folding. Returns the frame and
    warnings."""
    warnings: list[str] = []
    slash = is_legacy_header(df.columns)
    has_map = {m: m in df.columns for m in _FOLDED}
    folded: dict[str, dict[str, list[str]]] = {m: {} for m in _FOLDED}
    renames: dict[str, str] = {}
    used: dict[str, str] = {}
    for i, col in enumerate(df.columns, start=1):
        if slash and "/" in col:
            category, _, rest = col.partition("/")
            if "/" in rest:
                warnings.append(
                    f"{file}: header cell {i} {col!r} is malformed (more than one '/'); kept as "
                    f"column {legacy_name(col)}"
                )
            group = snake(category)
            if group in _FOLDED and "/" not in rest:
                folded[group].setdefault(snake(rest), []).append(col)
                continue
            target = legacy_name(col)
        else:
            target = col
            for group in _FOLDED:
                if not has_map[group] and col.startswith(group + "_"):
                    folded[group].setdefault(col[len(group) + 1 :], []).append(col)
                    target = ""
                    break
            if not target:
                continue
        if target in used:
            new = f"{target}_dup{i}"
            warnings.append(
                f"{file}: header cells {used[target]!r} and {col!r} (column {i}) both map to "
                f"{target}; the second is kept as {new}"
            )
            target = new
        used[target] = col
        if target != col:
            renames[col] = target
    for group, keys in folded.items():
        for key, cols in keys.items():
            if len(cols) > 1:
                warnings.append(
                    f"{file}: columns {cols} are the same {group} key {key!r}; the first "
                    "non-empty value is kept"
                )
    fold_cols = [c for keys in folded.values() for cols in keys.values() for c in cols]
    exprs = []
    for group, keys in folded.items():
        if keys or (group == "resource_tags" and not has_map[group]):
            exprs.append(_json_object(list(keys.items())).alias(group))
    out = df.with_columns(*exprs) if exprs else df
    out = out.drop([c for c in fold_cols if c not in _FOLDED])
    return out.rename({k: v for k, v in renames.items() if k in out.columns}), warnings
