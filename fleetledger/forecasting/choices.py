"""When a series' model is chosen, and the choices kept between runs (docs/forecasts.md, "Models
and the back-test").

The back-test that chooses a series' model reads the series through its **selection day**: the
last Sunday on or before the day it is trained through. The choice is therefore the same on
every day of a week (a daily run on Tuesday and one on Saturday choose on the same days), and it
is a function of the data alone: a full rebuild chooses exactly what the daily runs chose. So
the back-test of a week's first run can be kept and reused by the week's other runs:
`ChoiceCache` keeps each choice under a key made of the series, the back-test settings, the
statsforecast version and the values it was chosen on; a restated day before the selection day
changes the values, hence the key, and the series is back-tested again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from fleetledger.config_forecast import ForecastSettings
from fleetledger.forecasting.models import CANDIDATES, FLAT_MEAN, Choice

#: bump when the back-test or the choice rule changes: older kept choices no longer apply
CHOICE_RULES = 1


def selection_day(trained_through: date) -> date:
    """The day a series' model is chosen through: the last Sunday on or before `trained_through`."""
    return trained_through - timedelta(days=(trained_through.weekday() + 1) % 7)


def choice_history(
    y: np.ndarray, first_day: date, trained_through: date, min_days: int
) -> np.ndarray:
    """The values the back-test reads: the series through its selection day, or the whole
    series when that part is too short to back-test (the first days a series has enough
    history, or a series too short for any back-test)."""
    through = (selection_day(trained_through) - first_day).days + 1
    return y[:through] if through >= min_days else y


@functools.cache
def _statsforecast_version() -> str:
    try:
        return importlib.metadata.version("statsforecast")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _as_choice(raw: object) -> Choice | None:
    try:
        choice = Choice(**raw)  # type: ignore[arg-type]
    except TypeError:
        return None
    known = choice.model in (*CANDIDATES, FLAT_MEAN)
    return choice if known and isinstance(choice.backtest_windows, int) else None


@dataclass
class ChoiceCache:
    """Back-tested choices by key, read from and written to `path` (none: kept in memory only).
    `hits` and `misses` count this run's look-ups."""

    path: Path | None = None
    entries: dict[str, dict] = field(default_factory=dict)
    used: dict[str, dict] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    @classmethod
    def load(cls, path: Path) -> ChoiceCache:
        """The kept choices (an unreadable or missing file: none)."""
        try:
            raw = json.loads(path.read_text())
            entries = raw["choices"] if raw.get("rules") == CHOICE_RULES else {}
        except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
            entries = {}
        return cls(path=path, entries=entries)

    @staticmethod
    def key(uid: str, y: np.ndarray, windows: int, settings: ForecastSettings) -> str:
        h = hashlib.sha256()
        meta = [
            uid,
            windows,
            settings.backtest_horizon_days,
            settings.min_history_days,
            _statsforecast_version(),
        ]
        h.update(json.dumps(meta).encode())
        # rounded: two builds of the same data differ in the last bits of a day's sum
        h.update(np.ascontiguousarray(np.round(y, 6), dtype=float).tobytes())
        return h.hexdigest()

    def get(self, key: str) -> Choice | None:
        """The kept choice under `key`; None (a miss: back-test again) when there is none or
        the kept entry is not a choice of a known model (a damaged or hand-edited file)."""
        choice = _as_choice(self.entries.get(key))
        if choice is None:
            self.misses += 1
            return None
        self.hits += 1
        self.used[key] = asdict(choice)
        return choice

    def put(self, key: str, choice: Choice) -> None:
        self.used[key] = asdict(choice)

    def save(self) -> None:
        """Keep this run's choices (those of series no longer forecast are dropped)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps({"rules": CHOICE_RULES, "choices": self.used}, sort_keys=True))
        os.replace(tmp, self.path)
