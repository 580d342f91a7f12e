"""The `budgets:` and `alerts:` config schema (DESIGN.md, "Forecasts, budgets and alerts").

Typed config objects, validated when the config loads: channel kinds and their fields, alert
rules and their parameters, budgets and their scope. Delivery is not built here; the alerts
issue builds it on these objects. Secret fields (channel URLs, SMTP credentials) must be
`${ENV_VAR}` references in the file (fleetledger/config_secrets.py checks that on the raw
YAML); the models only ever see the expanded values and never print them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: the channel every alert can go to without being configured (the run log)
LOG_CHANNEL = "log"
#: the older budget form `{name, team, monthly_amount, thresholds}`
LEGACY_BUDGET_KEYS = frozenset({"team", "monthly_amount"})

_NAME = r"^[a-z0-9][a-z0-9_-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _http_url(value: str, what: str) -> str:
    # the value may be a secret: the message never repeats it
    if not value.startswith(("https://", "http://")):
        raise ValueError(f"{what} must be an http:// or https:// URL")
    return value


class _Channel(_Strict):
    name: str = Field(pattern=_NAME)
    # one message a day listing the day's alerts instead of one message per alert
    digest: bool = False

    @field_validator("name")
    @classmethod
    def _not_log(cls, value: str) -> str:
        if value == LOG_CHANNEL:
            raise ValueError(f"channel name {LOG_CHANNEL!r} is reserved for the run log")
        return value


class SlackChannel(_Channel):
    """A Slack-compatible incoming webhook."""

    kind: Literal["slack"]
    url: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "url")


class WebhookChannel(_Channel):
    """A generic JSON webhook (one POST per alert)."""

    kind: Literal["webhook"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "url")


class SmtpSettings(_Strict):
    host: str = Field(min_length=1)
    port: int = Field(default=587, ge=1, le=65535)
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str | None = None
    password: str | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> SmtpSettings:
        if (self.username is None) != (self.password is None):
            raise ValueError("smtp: give both username and password, or neither")
        return self


class EmailChannel(_Channel):
    """SMTP email."""

    kind: Literal["email"]
    to: list[str] = Field(min_length=1)
    from_: str = Field(alias="from")
    smtp: SmtpSettings

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("to")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for i, address in enumerate(value):
            if "@" not in address:
                raise ValueError(f"to[{i}]: {address!r} is not an email address")
        return value

    @field_validator("from_")
    @classmethod
    def _from(cls, value: str) -> str:
        if "@" not in value:
            raise ValueError(f"{value!r} is not an email address")
        return value


Channel = Annotated[SlackChannel | WebhookChannel | EmailChannel, Field(discriminator="kind")]


class _Rule(_Strict):
    name: str | None = Field(default=None, pattern=_NAME)
    # names from alerts.channels (or `log`); unset: the owning team's channels, else the log
    channels: list[str] | None = None
    muted: bool = False


class IdleAllocationRule(_Rule):
    """An allocation idle for longer than `min_hours` (a notebook left on over a weekend)."""

    kind: Literal["idle_allocation"]
    min_hours: float = Field(default=8, gt=0)
    # an hour of the run is idle when at least this share of its held GPU-seconds is
    # allocated-idle (utilisation under idle_threshold)
    min_idle_share: float = Field(default=0.9, gt=0, le=1)


class IdleShareRule(_Rule):
    """A team's allocated-idle share of its GPU-hours above `max_share` in a calendar month."""

    kind: Literal["idle_share"]
    max_share: float = Field(default=0.25, gt=0, le=1)


class XidSpikeRule(_Rule):
    """A node whose XID count jumps above `factor` x its trailing baseline."""

    kind: Literal["xid_spike"]
    factor: float = Field(default=3, gt=1)
    # the trailing baseline: the node's mean daily XID count over this many days before
    baseline_days: int = Field(default=7, ge=1)
    # a day needs at least this many XIDs to be a spike: a single stray XID on a clean node
    # (baseline 0) pages no one
    min_count: int = Field(default=2, ge=1)
    # ... or at least this many fatal XIDs (dbt var `fatal_xids`: 79, 48, 95, 119, 120), so one
    # GPU falling off the bus does page; null: fatal XIDs count like the others
    fatal_min_count: int | None = Field(default=1, ge=1)


class GpuDownRule(_Rule):
    """A GPU down for more than `min_hours`."""

    kind: Literal["gpu_down"]
    min_hours: float = Field(default=4, gt=0)


class SpendAnomalyRule(_Rule):
    """A day's spend outside the forecast's 99 % band and more than `min_impact` away from it
    (reporting currency)."""

    kind: Literal["spend_anomaly"]
    min_impact: float = Field(default=500, ge=0)


class RestatementRule(_Rule):
    """A restated billing period moving a provider's spend by more than `min_share`."""

    kind: Literal["restatement"]
    min_share: float = Field(default=0.05, gt=0)


class InferenceCostRiseRule(_Rule):
    """An inference service (model_name) whose cost per 1M tokens in a calendar week (Monday to
    Sunday, to date for the last) is more than `min_rise` above the week before's, while its
    GPUs sat below `max_utilization` that week (the rise is waste, not load)."""

    kind: Literal["inference_cost_rise"]
    min_rise: float = Field(default=0.2, gt=0)
    max_utilization: float = Field(default=0.5, gt=0, le=1)


class InferenceSloRule(_Rule):
    """An inference service whose hourly TTFT p95 is over `ttft_p95_seconds` for at least
    `min_hours` consecutive hours while its GPUs sit below `max_utilization` (slow without
    being busy: a configuration or scheduling problem, not a capacity one)."""

    kind: Literal["inference_slo"]
    ttft_p95_seconds: float = Field(default=1.0, gt=0)
    max_utilization: float = Field(default=0.5, gt=0, le=1)
    min_hours: int = Field(default=1, ge=1)


AlertRule = Annotated[
    IdleAllocationRule
    | IdleShareRule
    | XidSpikeRule
    | GpuDownRule
    | SpendAnomalyRule
    | RestatementRule
    | InferenceCostRiseRule
    | InferenceSloRule,
    Field(discriminator="kind"),
]


class Alerts(_Strict):
    # alert messages link into the explorer when set
    app_url: str | None = None
    # alerts whose period is older than this many days before the data's last day are recorded
    # in fct_alerts but not sent (a first run over a long history sends only recent news)
    lookback_days: int = Field(default=7, ge=0)
    # a failed delivery is retried on a later run, not before attempted_at +
    # 2^(attempt-1) x retry_base_seconds, at most max_attempts times
    retry_base_seconds: float = Field(default=300, ge=0)
    max_attempts: int = Field(default=8, ge=1)
    # every network call of a delivery (HTTP, SMTP) gives up after this many seconds
    timeout_seconds: float = Field(default=10, gt=0)
    channels: list[Channel] = Field(default_factory=list)
    rules: list[AlertRule] = Field(default_factory=list)

    @field_validator("app_url")
    @classmethod
    def _app_url(cls, value: str | None) -> str | None:
        return None if value is None else _http_url(value, "app_url")

    @model_validator(mode="after")
    def _names(self) -> Alerts:
        seen: set[str] = set()
        for i, ch in enumerate(self.channels):
            if ch.name in seen:
                raise ValueError(f"channels[{i}]: channel name {ch.name!r} is used twice")
            seen.add(ch.name)
        counts: dict[str, int] = {}
        names: set[str] = set()
        for i, rule in enumerate(self.rules):
            counts[rule.kind] = counts.get(rule.kind, 0) + 1
            name = rule.name or f"{rule.kind}-{counts[rule.kind]}"
            if name in names:
                raise ValueError(f"rules[{i}]: rule name {name!r} is used twice")
            names.add(name)
            _known_channels(f"rules[{i}].channels", rule.channels or [], seen)
        return self

    def channel_names(self) -> set[str]:
        return {ch.name for ch in self.channels} | {LOG_CHANNEL}

    def rule_names(self) -> list[str]:
        """Each rule's name: its own, else `<kind>-<n>` (n counting the rules of its kind)."""
        counts: dict[str, int] = {}
        out = []
        for rule in self.rules:
            counts[rule.kind] = counts.get(rule.kind, 0) + 1
            out.append(rule.name or f"{rule.kind}-{counts[rule.kind]}")
        return out


def _known_channels(key: str, names: list[str], channels: set[str]) -> None:
    for j, name in enumerate(names):
        if name != LOG_CHANNEL and name not in channels:
            known = ", ".join(sorted(channels | {LOG_CHANNEL}))
            raise ValueError(f"{key}[{j}]: no channel named {name!r} in alerts.channels ({known})")


class BudgetScope(_Strict):
    """What a budget counts: one team, one provider, one sub-account, or (empty) the whole bill."""

    team: str | None = None
    provider: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    sub_account: str | None = None

    @model_validator(mode="after")
    def _one(self) -> BudgetScope:
        given = [k for k in ("team", "provider", "sub_account") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"a scope names one of team, provider, sub_account, not {given}")
        return self

    def kind(self) -> str:
        for k in ("team", "provider", "sub_account"):
            if getattr(self, k) is not None:
                return k
        return "total"

    def value(self) -> str | None:
        return self.team or self.provider or self.sub_account


class Budget(_Strict):
    name: str = Field(min_length=1)
    scope: BudgetScope = Field(default_factory=BudgetScope)
    amount: float = Field(gt=0)
    # unset: the reporting currency
    currency: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")
    period: Literal["month", "quarter"] = "month"
    thresholds: list[float] = Field(default_factory=lambda: [0.5, 0.8, 1.0], min_length=1)
    basis: list[Literal["actual", "forecast"]] = Field(
        default_factory=lambda: ["actual", "forecast"], min_length=1
    )
    # names from alerts.channels (or `log`); empty: the log only
    channels: list[str] = Field(default_factory=list)
    include_shared_idle: bool = False
    # set when the file used the older form {name, team, monthly_amount}
    legacy_form: bool = Field(default=False, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """The older `{name, team, monthly_amount, thresholds}` form: scope {team}, period
        month (the loader warns that it is deprecated)."""
        if not isinstance(data, dict):
            return data
        if "legacy_form" in data:
            raise ValueError("legacy_form is not a budget key")
        if not LEGACY_BUDGET_KEYS & set(data):
            return data
        mixed = sorted({"scope", "amount", "period"} & set(data))
        if mixed:
            raise ValueError(
                f"the older form (team, monthly_amount) cannot be mixed with {', '.join(mixed)}"
            )
        new = {k: v for k, v in data.items() if k not in LEGACY_BUDGET_KEYS}
        if data.get("team") is not None:
            new["scope"] = {"team": data["team"]}
        if "monthly_amount" in data:
            new["amount"] = data["monthly_amount"]
        return {**new, "period": "month", "legacy_form": True}

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, value: list[float]) -> list[float]:
        if any(t <= 0 for t in value):
            raise ValueError("thresholds are shares of the amount, each > 0")
        if value != sorted(set(value)):
            raise ValueError("thresholds must be increasing, each once")
        return value

    @field_validator("basis")
    @classmethod
    def _basis(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("basis lists actual and forecast at most once each")
        return value

    @model_validator(mode="after")
    def _shared_idle(self) -> Budget:
        if self.include_shared_idle and self.scope.team is None:
            raise ValueError("include_shared_idle is for team budgets (scope: {team: ...})")
        return self

    @property
    def team(self) -> str | None:
        return self.scope.team


def check_budgets(budgets: list[Budget], alerts: Alerts) -> None:
    """Budget names are unique and their channels exist (ValueError naming the budget)."""
    seen: set[str] = set()
    channels = {ch.name for ch in alerts.channels}
    for i, b in enumerate(budgets):
        if b.name in seen:
            raise ValueError(f"budgets[{i}]: budget name {b.name!r} is used twice")
        seen.add(b.name)
        _known_channels(f"budgets[{i}].channels", b.channels, channels)


def check_team_channels(teams: list[tuple[str, list[str]]], alerts: Alerts) -> None:
    """The channels each team names exist (ValueError naming the team)."""
    channels = {ch.name for ch in alerts.channels}
    for i, (_team, names) in enumerate(teams):
        _known_channels(f"teams[{i}].channels", names, channels)
