"""Facility and IT power meters of the on-prem site, one reading a minute, and their PUE."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from fleetledger.generator import model as M
from fleetledger.generator.model import DAY, Fleet
from fleetledger.generator.telemetry import GpuSeries


def write_power(
    fleet: Fleet, site: str, series_by_host: dict[str, list[GpuSeries]], out_dir: Path
) -> dict[str, dict[str, float]]:
    """Write power-YYYY-MM-DD.csv files; return {day: {facility_kwh, it_kwh, pue}}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    t = np.arange(fleet.t0, fleet.t1, 60, dtype=np.int64)
    it_w = np.full(t.size, M.SITE_OTHER_IT_KW * 1000.0)
    for host, series in series_by_host.items():
        down = np.zeros(t.size, dtype=bool)
        for o in fleet.outages:
            if o.host == host:
                down |= (t >= o.start) & (t < o.end)
        it_w += np.where(down, 0.0, M.HOST_OVERHEAD_W)
        for s in series:
            i = np.searchsorted(s.times, t, side="right") - 1
            ok = (i >= 0) & (t - s.times[np.maximum(i, 0)] < 2 * fleet.scrape_interval)
            it_w += np.where(ok, s.power_w[np.maximum(i, 0)], 0.0)
    hour = (t % DAY) / 3600.0
    ratio = 1.28 + 0.07 * np.sin(2 * np.pi * (hour - 9.0) / 24.0)
    it_kw = np.round(it_w / 1000.0, 3)
    fac_kw = np.round(it_kw * ratio, 3)
    out: dict[str, dict[str, float]] = {}
    for d in range(fleet.days):
        sl = slice(d * 1440, (d + 1) * 1440)
        day = datetime.fromtimestamp(fleet.t0 + d * DAY, UTC).strftime("%Y-%m-%d")
        stamps = [datetime.fromtimestamp(int(x), UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for x in t[sl]]
        df = pl.concat(
            [
                pl.DataFrame(
                    {
                        "timestamp": stamps,
                        "site": site,
                        "meter": f"{site}-utility-main",
                        "kind": "facility",
                        "kw": fac_kw[sl],
                    }
                ),
                pl.DataFrame(
                    {
                        "timestamp": stamps,
                        "site": site,
                        "meter": f"{site}-ups-output",
                        "kind": "it",
                        "kw": it_kw[sl],
                    }
                ),
            ]
        ).sort(["timestamp", "kind"])
        df.write_csv(out_dir / f"power-{day}.csv")
        # every reading covers the minute after it
        fac = float(fac_kw[sl].sum()) / 60.0
        it = float(it_kw[sl].sum()) / 60.0
        out[day] = {"facility_kwh": fac, "it_kwh": it, "pue": fac / it}
    return out
