"""What the forecasts tell the run: data-health findings (`fct_data_health`, source
`forecasts`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ForecastNote:
    """Something the forecasts tell the run (a data-health finding): `check`, severity, count."""

    check: str
    severity: str
    message: str
    count: int = 1
