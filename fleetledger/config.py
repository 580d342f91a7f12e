"""Load and validate `$FLEETLEDGER_HOME/fleetledger.yml`.

The file is fleetledger's public configuration contract (see docs/config.md). Secrets are written
as `${ENV_VAR}` references and resolved from the environment at load time; a secret written
inline is refused, naming its key, never its value (fleetledger/config_secrets.py, checked on the
raw YAML). Relative `location`s are resolved against the directory that holds the config file
and must stay inside the source roots (`source_roots`, `check_source_roots`). Each source's
options must be ones its kind's readers read (`KindSpec.options`).
"""

from __future__ import annotations

import logging
import os
import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from fleetledger import yaml_text
from fleetledger.config_alerts import Alerts, Budget, check_budgets, check_team_channels
from fleetledger.config_economics import EconomicsSettings
from fleetledger.config_forecast import ForecastSettings
from fleetledger.config_secrets import inline_secrets
from fleetledger.config_warehouse import WarehouseSettings
from ingest import registry
from ingest.core.findings import IngestFinding
from ingest.core.findings_landing import RESERVED_SOURCE_NAMES
from ingest.core.guards import DEFAULT_MAX_ROW_DROP

DEFAULT_PARTITIONS_START = date(2024, 1, 1)

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WILDCARD = re.compile(r"[*?\[{]")
#: URL schemes that name no file or object (a slurm source that runs sacct)
_NOT_A_LOCATION = ("sacct://",)

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A config file that does not validate; the message names the key and the problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    # one of the registered source kinds (ingest/registry.py: the kind specs)
    kind: str
    location: str
    options: dict[str, Any] = Field(default_factory=dict)
    # the landing guard of this source (default: the top-level `max_row_drop`)
    max_row_drop: float | None = Field(default=None, ge=0, le=1)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_SOURCE_NAMES:
            raise ValueError(
                f"source name {value!r} is reserved: the run records its own data-health "
                f"findings under {', '.join(RESERVED_SOURCE_NAMES)}; choose another name"
            )
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        known = registry.kind_names()
        if value in known:
            return value
        hint = (
            "; rate cards are configured under `rate_cards:`, not as a source"
            if value == "rate_card"
            else ""
        )
        raise ValueError(f"unknown source kind {value!r} (known: {', '.join(known)}){hint}")

    @model_validator(mode="after")
    def _known_options(self) -> Source:
        """Every option is one the kind's readers read (a typo is not silently ignored)."""
        spec = registry.spec_for(self.kind)
        problems = spec.options.problems(self.kind, self.options, self.location)
        if problems:
            raise ValueError(f"source {self.name}: " + "; ".join(problems))
        return self


class Node(_Strict):
    host: str
    resource_id: str | None = None
    provider: Literal["aws", "gcp", "azure", "oci", "onprem"]
    site: str
    instance_type: str | None = None
    # 64 at most: the GPU slots int_gpus makes per node
    gpus: int = Field(ge=0, le=64)
    gpu_model: str | None = None
    cluster: str | None = None


class TeamMatch(_Strict):
    slurm_account: list[str] = Field(default_factory=list)
    k8s_namespace: list[str] = Field(default_factory=list)
    k8s_label: dict[str, str] = Field(default_factory=dict)
    cloud_tag: dict[str, str] = Field(default_factory=dict)
    # FOCUS SubAccountId: AWS usage account, GCP project id, Azure subscription, OCI compartment
    cloud_account: list[str] = Field(default_factory=list)


class Team(_Strict):
    team: str
    owners: list[str] = Field(default_factory=list)
    match: TeamMatch = Field(default_factory=TeamMatch)
    # where alerts about the team go when their rule names no channels (alerts.channels names,
    # or `log`); unset: the log
    channels: list[str] = Field(default_factory=list)


class RateCard(_Strict):
    """On-prem / colo cost of a class of nodes: capex amortised per hour plus energy."""

    site: str
    hosts: list[str]
    capex: float = Field(gt=0, description="purchase price of one node, reporting currency")
    amortisation_months: int = Field(gt=0)
    power_price_per_kwh: float = Field(ge=0)
    host_overhead_w: float = Field(default=0, ge=0, description="non-GPU IT power per node")
    currency: str = "USD"


class KindRule(_Strict):
    kind: Literal["training", "inference", "interactive", "batch"]
    match: dict[str, str] = Field(
        default_factory=dict,
        description="regex per field: partition, queue, job_name, namespace, label:<key>",
    )


UtilizationSignal = Literal["auto", "gr_engine_active", "sm_active", "gpu_util"]


class SiteSettings(_Strict):
    idle_threshold: float | None = Field(default=None, ge=0, le=1)
    utilization_signal: UtilizationSignal | None = None
    # power meters (docs/metrics.md, "PUE"): the `it` meters whose sum is the site's IT energy
    # (e.g. the UPS output), or the hierarchy child -> parent (a PDU under its UPS); a child is
    # never added to its parent
    it_meters: list[str] | None = None
    meter_parents: dict[str, str] = Field(default_factory=dict)


class HealthSettings(_Strict):
    """Straggler detection (docs/metrics.md): a GPU straggles when its utilisation or SM clock is
    below (1 - straggler_margin) x the median of the other GPUs of its run for at least
    straggler_min_seconds, compared per straggler_bucket_seconds bucket."""

    straggler_margin: float = Field(default=0.2, gt=0, lt=1)
    straggler_min_seconds: int = Field(default=1800, gt=0)
    straggler_bucket_seconds: int = Field(default=60, gt=0)

    @field_validator("straggler_bucket_seconds")
    @classmethod
    def _bucket_divides_a_day(cls, value: int) -> int:
        # buckets are stored by day (docs/operations.md, "Incremental runs"): none may span
        # midnight
        if 86400 % value:
            raise ValueError(
                f"straggler_bucket_seconds must divide a day (86400 s) so that no bucket spans "
                f"midnight, e.g. 60, 300 or 3600; got {value}"
            )
        return value

    def dbt_vars(self) -> dict[str, float | int]:
        return self.model_dump()


class Config(_Strict):
    reporting_currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    sources: list[Source] = Field(default_factory=list)
    inventory: list[Node] = Field(default_factory=list)
    inventory_file: str | None = None
    teams: list[Team] = Field(default_factory=list)
    rate_cards: list[RateCard] = Field(default_factory=list)
    kind_rules: list[KindRule] = Field(default_factory=list)
    idle_threshold: float = Field(default=0.05, ge=0, le=1)
    # the first UTC day a run may account (the first Dagster partition): set it earlier to
    # backfill older bills and scheduler logs
    partitions_start: date = DEFAULT_PARTITIONS_START
    # the landing guard (docs/landing.md): a run never replaces a landed partition by one with
    # more than this share fewer rows (landed + quarantined) unless `--allow-shrink SOURCE`
    max_row_drop: float = Field(default=DEFAULT_MAX_ROW_DROP, ge=0, le=1)
    utilization_signal: UtilizationSignal = "auto"
    # how long a DCGM sample stays valid; unset: 2 x each series' median sample interval
    stale_after_seconds: int | None = Field(default=None, gt=0)
    # how long a power reading covers at most; unset: 2 x each meter's median interval
    meter_stale_after_seconds: int | None = Field(default=None, gt=0)
    sites: dict[str, SiteSettings] = Field(default_factory=dict)
    health: HealthSettings = Field(default_factory=HealthSettings)
    currency_rates: dict[str, float] = Field(default_factory=dict)
    budgets: list[Budget] = Field(default_factory=list)
    alerts: Alerts = Field(default_factory=Alerts)
    # forecasts and capacity (docs/forecasts.md)
    forecast: ForecastSettings = Field(default_factory=ForecastSettings)
    # inference unit costs and the recommendation rules' thresholds (docs/config.md)
    economics: EconomicsSettings = Field(default_factory=EconomicsSettings)
    # where local source locations may be (docs/config.md, "Source roots"); unset: relative
    # locations stay inside the config file's folder or $FLEETLEDGER_HOME
    source_roots: list[str] | None = None
    # the engine dbt builds on (docs/scaling.md), the DuckDB memory limit and threads of the
    # build and of ingest (docs/config.md)
    warehouse: WarehouseSettings = Field(default_factory=WarehouseSettings)

    # where the file was loaded from; relative locations resolve against it
    base_dir: Path = Field(default=Path("."), exclude=True)
    # what loading found that is worth telling without refusing the file (deprecated forms)
    _findings: list[IngestFinding] = PrivateAttr(default_factory=list)

    @field_validator("sources")
    @classmethod
    def _unique_source_names(cls, sources: list[Source]) -> list[Source]:
        seen: set[str] = set()
        for s in sources:
            if s.name in seen:
                raise ValueError(f"source name {s.name!r} is used twice")
            seen.add(s.name)
        return sources

    @model_validator(mode="after")
    def _budget_channels(self) -> Config:
        check_budgets(self.budgets, self.alerts)
        check_team_channels([(t.team, t.channels) for t in self.teams], self.alerts)
        return self

    def source(self, name: str) -> Source:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(f"no source named {name!r} in the config")

    @property
    def findings(self) -> list[IngestFinding]:
        """What loading found without refusing the file (check `config_deprecated`, info)."""
        return self._findings

    def resolve(self, location: str) -> str:
        """An absolute path (or URL) for a source location given relative to the config file."""
        if "://" in location or os.path.isabs(location):
            return location
        return str((self.base_dir / location).resolve())


def fleetledger_home() -> Path:
    return Path(os.environ.get("FLEETLEDGER_HOME", "./data")).resolve()


def config_path(home: Path | None = None) -> Path:
    return (home or fleetledger_home()) / "fleetledger.yml"


def _expand_env(value: Any, key: str) -> Any:
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            var = m.group(1)
            if var not in os.environ:
                raise ConfigError(f"{key}: environment variable {var} is not set")
            return os.environ[var]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, dict):
        return {k: _expand_env(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, f"{key}[{i}]") for i, v in enumerate(value)]
    return value


def _format_errors(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: invalid config"]
    for e in err.errors():
        loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in e["loc"])
        loc = loc.replace(".[", "[")
        lines.append(f"  {loc or '<root>'}: {e['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], path: Path) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    inline = inline_secrets(data)
    if inline:
        raise ConfigError(
            f"{path}: secrets must be ${{ENV_VAR}} references, not written inline "
            f"(the value is not shown): {', '.join(inline)}"
        )
    data = _expand_env(data, "")
    try:
        cfg = Config.model_validate({**data, "base_dir": path.parent})
    except ValidationError as err:
        raise ConfigError(_format_errors(path, err)) from None
    check_source_roots(cfg, path)
    for i, b in enumerate(cfg.budgets):
        if b.legacy_form:
            message = (
                f"budgets[{i}] ({b.name}): the form {{name, team, monthly_amount}} is deprecated; "
                "write scope: {team: ...}, amount, period: month"
            )
            log.warning("%s: %s", path, message)
            cfg.findings.append(IngestFinding("config_deprecated", message, "info"))
    where = [f"inventory[{i}]" for i in range(len(cfg.inventory))]
    if cfg.inventory_file:
        inventory_file = Path(cfg.resolve(cfg.inventory_file))
        from_file = _load_inventory_file(inventory_file)
        cfg.inventory = cfg.inventory + [node for _where, node in from_file]
        where += [w for w, _node in from_file]
    problems = inventory_problems(cfg.inventory, where)
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return cfg


def inventory_problems(nodes: list[Node], where: list[str]) -> list[str]:
    """A host listed twice, or a billed resource given to two hosts (each bill line of it
    would be counted for both), named by where each entry is (`where[i]` for `nodes[i]`)."""
    problems = []
    for label, key in (("host", lambda n: n.host), ("resource_id", lambda n: n.resource_id)):
        seen: dict[str, int] = {}
        for i, node in enumerate(nodes):
            value = key(node)
            if value is None:
                continue
            if value in seen:
                first = nodes[seen[value]]
                what = (
                    "is listed twice"
                    if label == "host"
                    else f"is given to hosts {first.host} and {node.host} (each bill line of it "
                    "would be counted for both)"
                )
                problems.append(
                    f"inventory: {label} {value!r} {what}: {where[seen[value]]} and {where[i]}"
                )
            else:
                seen[value] = i
    return problems


def source_roots(cfg: Config) -> tuple[list[str], bool]:
    """The roots local locations must stay inside, and whether they were set explicitly
    (`source_roots`; else the config file's folder and `$FLEETLEDGER_HOME`, for relative
    locations only). A root is a path (relative ones resolve against the config file's
    folder) or a URL prefix (`s3://bucket/prefix`)."""
    if cfg.source_roots is None:
        defaults = [_normal(str(cfg.base_dir)), _normal(str(fleetledger_home()))]
        return list(dict.fromkeys(defaults)), False
    return [
        root if "://" in root else _normal(os.path.join(cfg.base_dir, root))
        for root in cfg.source_roots
    ], True


def _normal(path: str) -> str:
    # lexical: `..` is resolved, links are not followed (a link inside a root is the user's)
    return os.path.normpath(os.path.abspath(path))


def _under(location: str, roots: list[str]) -> bool:
    for root in roots:
        if "://" in root or "://" in location:
            if "://" in root and "://" in location:
                prefix = root.rstrip("/") + "/"
                if location == root.rstrip("/") or location.startswith(prefix):
                    return True
            continue
        if location == root or location.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def _location_problem(cfg: Config, location: str) -> str | None:
    """Why a location is outside the source roots, or None."""
    if location.startswith(_NOT_A_LOCATION):
        return None
    roots, explicit = source_roots(cfg)
    is_url = "://" in location
    relative = not is_url and not os.path.isabs(location)
    if not relative and not explicit:
        return None
    parts = Path(location).parts if not is_url else location.split("://", 1)[1].split("/")
    wild = next((i for i, part in enumerate(parts) if _WILDCARD.search(part)), None)
    if wild is not None and ".." in parts[wild:]:
        return f"{location!r}: `..` after a wildcard may leave the source roots"
    target = location if is_url else _normal(os.path.join(cfg.base_dir, location))
    if _under(target, roots):
        return None
    which = "source_roots" if explicit else "the config file's folder or $FLEETLEDGER_HOME"
    return f"{location!r} resolves to {target}, outside {which} ({', '.join(roots)})"


def check_source_roots(cfg: Config, path: Path) -> None:
    """Every source location (and a slurm source's `events`, and `inventory_file`) is inside
    the source roots: relative ones always, absolute paths and URLs when `source_roots` is
    set. ConfigError naming the source otherwise; nothing is read."""
    problems = []
    for i, s in enumerate(cfg.sources):
        where = [("location", s.location)]
        if isinstance(s.options.get("events"), str):
            where.append(("options.events", s.options["events"]))
        for key, location in where:
            problem = _location_problem(cfg, location)
            if problem:
                problems.append(f"  sources[{i}].{key} (source {s.name}): {problem}")
    if cfg.inventory_file:
        problem = _location_problem(cfg, cfg.inventory_file)
        if problem:
            problems.append(f"  inventory_file: {problem}")
    if problems:
        raise ConfigError("\n".join([f"{path}: source outside the source roots", *problems]))


def _load_inventory_file(path: Path) -> list[tuple[str, Node]]:
    """The file's nodes, each with where it is (`<path>:<line>`)."""
    import csv

    nodes: list[tuple[str, Node]] = []
    with path.open(newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh), start=2):
            clean = {k: v for k, v in row.items() if v not in ("", None)}
            try:
                nodes.append((f"{path}:{i}", Node.model_validate(clean)))
            except ValidationError as err:
                raise ConfigError(_format_errors(Path(f"{path}:{i}"), err)) from None
    return nodes


def load_config(path: Path | None = None) -> Config:
    path = path or config_path()
    if not path.exists():
        raise ConfigError(
            f"{path}: no config file (set FLEETLEDGER_HOME or run `fleetledger demo`)"
        )
    try:
        data = yaml_text.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {_yaml_problem(err)}") from None
    return parse_config(data, path)


def _yaml_problem(err: yaml.YAMLError) -> str:
    """The YAML error's problem and position, without the quoted source line (which may hold
    a secret)."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or type(err).__name__
    if mark is None:
        return str(problem)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
