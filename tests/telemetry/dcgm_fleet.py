"""One small fleet's DCGM samples written in every shape (the `shape_fleet` fixture).

The fleet: 2 AWS (hpc_job labels), 1 GKE (exporter pod `Hostname`, node in `node`, pod labels),
a GKE MIG node (GPU_I_ID / GPU_I_PROFILE series, time-sliced pods, GPU_UTIL blank sentinels) and
2 on-prem nodes (XID 79 outage), 2 days from 2026-10-02, a scrape every 120 s. Session-scoped:
written once, read by several test modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl

from fleetledger.generator.dcgm_shapes import SHAPES, node_day_path, write_shapes
from fleetledger.generator.dcgm_text import scrape_frame
from fleetledger.generator.fleet import build_fleet
from fleetledger.generator.model import DAY
from fleetledger.generator.telemetry import node_series
from ingest.core.common import ReadResult
from ingest.telemetry.dcgm_formats import read_dcgm

START = date(2026, 10, 2)
DAYS = 2
SCRAPE_S = 120
LINEAGE = ("x_source_file", "x_line_number")


@dataclass
class ShapeFleet:
    """Where each shape's files are: `root/<shape>/sources/<provider>/dcgm/<day>/<host><ext>`."""

    root: Path
    days: list[date]
    providers: dict[str, str]  # host -> provider

    def files(self, shape: str, provider: str, day: date) -> list[Path]:
        d = self.root / shape / "sources" / provider / "dcgm" / day.isoformat()
        return sorted(p for p in d.iterdir() if p.is_file())

    def options(self, shape: str, provider: str) -> dict[str, str]:
        opts = {"format": shape}
        if provider == "gcp" and shape != "nvidia_smi_csv":
            opts["node_label"] = "node"
        return opts

    def read(self, shape: str, day: date | None = None) -> ReadResult:
        """Every file of the shape (one day, or all), read as the generator's config says."""
        results = []
        for provider in ("aws", "gcp", "onprem"):
            for d in [day] if day else self.days:
                opts = self.options(shape, provider)
                for f in self.files(shape, provider, d):
                    results.append(read_dcgm(f, source=f"{provider}-dcgm", options=opts))
        return ReadResult.concat("dcgm_samples", results)


def sorted_rows(df: pl.DataFrame) -> pl.DataFrame:
    """The rows without lineage, in a canonical order (for comparing shapes)."""
    cols = [c for c in df.columns if c not in LINEAGE]
    return df.select(cols).sort(cols, nulls_last=True)


def write_shape_fleet(root: Path) -> ShapeFleet:
    """Write the fleet's DCGM samples in every shape under `root`."""
    fleet = build_fleet(
        start=START,
        days=DAYS,
        seed=3,
        scrape_interval=SCRAPE_S,
        aws_nodes=2,
        gcp_nodes=1,
        onprem_nodes=2,
        mig=True,
    )
    for node in fleet.nodes:
        series = node_series(fleet, node)
        for d in range(DAYS):
            a = fleet.t0 + d * DAY
            day = datetime.fromtimestamp(a, UTC).strftime("%Y-%m-%d")
            lines = scrape_frame(fleet, node, series, a, a + DAY)
            write_shapes(
                lines,
                {s: node_day_path(root / s / "sources", node, day, s) for s in SHAPES},
            )
    return ShapeFleet(
        root=root,
        days=[START + timedelta(days=i) for i in range(DAYS)],
        providers={n.host: n.provider for n in fleet.nodes},
    )
