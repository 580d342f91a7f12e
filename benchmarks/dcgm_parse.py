"""Benchmark: fleetledger's dcgm-exporter text parser vs prometheus_client's.

    python -m benchmarks.dcgm_parse [--samples 3000000] [--repeat 3] [--client-samples 150000]
    fleetledger bench [same options]

Writes dcgm-exporter scrape files (plain text, as the exporter serves them: HELP/TYPE comments,
10-label series, a millisecond timestamp on every sample) for a generated fleet into a temporary
folder, then times, on the same files held in memory:

- `ingest.telemetry.dcgm.parse_text` (what `read_dcgm_text` runs), on every file: the best of
  `--repeat` runs, wall clock and process CPU time;
- `prometheus_client.parser.text_string_to_metric_families` (a dev dependency), which is slow
  enough that it runs on the first files only (`--client-samples`); ours is timed on exactly
  those files too, and the ratio is taken there.

Both parsers must find the same number of samples (ours: rows landed + blank sentinels +
quarantined lines). Results are printed, not asserted: see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from fleetledger.generator.dcgm_text import scrape_frame
from fleetledger.generator.fleet import build_fleet
from fleetledger.generator.model import DAY
from fleetledger.generator.telemetry import GpuSeries, node_series
from ingest.telemetry.dcgm import parse_text

SCRAPE_S = 30  # dcgm-exporter's default collection interval
START = date(2026, 10, 1)


def write_scrape_files(out: Path, samples: int, scrape_s: int = SCRAPE_S) -> list[Path]:
    """Scrape files of a generated fleet (4 AWS, 2 GKE, 4 on-prem nodes), one per node and day,
    until about `samples` sample lines are written."""
    # a node-day is ~8 GPUs x 5-10 metrics x (a day / the scrape interval): 7 on AWS (with the
    # throttle reasons), 5 on GKE, 10 on-prem (with the SBE and DBE ECC counters and the 3
    # row-remap fields): (4 x 7 + 2 x 5 + 4 x 10) / 10 = 7.8 per GPU and scrape
    per_day = 10 * 8 * 7.8 * (DAY / scrape_s)
    days = max(2, math.ceil(samples / per_day))
    fleet = build_fleet(start=START, days=days, seed=11, scrape_interval=scrape_s)
    files: list[Path] = []
    series: dict[str, list[GpuSeries]] = {}
    written = 0
    for d in range(days):
        for node in fleet.nodes:
            if written >= samples:
                return files
            if node.host not in series:
                series[node.host] = node_series(fleet, node)
            a = fleet.t0 + d * DAY
            lines = scrape_frame(fleet, node, series[node.host], a, a + DAY)["line"]
            path = out / f"{node.host}-{d:02d}.prom"
            path.write_text("\n".join(lines.to_list()) + "\n")
            written += int(lines.str.starts_with("#").not_().sum())
            files.append(path)
    return files


def ours(blobs: Sequence[tuple[str, bytes]]) -> int:
    """Samples found by fleetledger's parser (rows + blanks + quarantined lines)."""
    n = 0
    now = datetime.now(UTC)
    for name, data in blobs:
        node_label = "node" if name.startswith("gke") else None
        r = parse_text(data, source="bench", file=name, default_time=now, node_label=node_label)
        n += r.rows.height + r.sentinels_dropped + r.quarantine.height
    return n


def client(blobs: Sequence[tuple[str, bytes]]) -> int:
    """Samples found by prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    n = 0
    for _, data in blobs:
        for family in text_string_to_metric_families(data.decode()):
            n += len(family.samples)
    return n


def timed(fn: Callable[[], int], repeat: int) -> tuple[int, float, float]:
    """(result, best wall seconds, CPU seconds of that run)."""
    best = (0, math.inf, math.inf)
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        if wall < best[1]:
            best = (result, wall, cpu)
    return best


def run(
    samples: int,
    repeat: int,
    client_samples: int,
    keep: Path | None = None,
    scrape_s: int = SCRAPE_S,
) -> dict:
    with tempfile.TemporaryDirectory(prefix="dcgm-bench-") as tmp:
        out = keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        files = write_scrape_files(out, samples, scrape_s)
        gen_s = time.perf_counter() - t
        blobs = [(f.name, f.read_bytes()) for f in files]
    size = sum(len(b) for _, b in blobs)
    n, wall, cpu = timed(lambda: ours(blobs), repeat)
    # the client's share: the first files, up to client_samples samples
    sub: list[tuple[str, bytes]] = []
    counted = 0
    for name, data in blobs:
        if counted >= client_samples:
            break
        sub.append((name, data))
        counted += sum(1 for line in data.splitlines() if line and not line.startswith(b"#"))
    n_sub, wall_sub, _ = timed(lambda: ours(sub), repeat)
    n_client, wall_client, _ = timed(lambda: client(sub), 1)
    if n_client != n_sub:
        raise SystemExit(f"the parsers disagree on {len(sub)} files: {n_sub} vs {n_client}")
    return {
        "files": len(blobs),
        "mb": size / 1e6,
        "samples": n,
        "generate_s": gen_s,
        "ours_wall_s": wall,
        "ours_cpu_s": cpu,
        "ours_rate": n / wall,
        "ours_cpu_rate": n / cpu,
        "sub_files": len(sub),
        "sub_samples": n_sub,
        "ours_sub_rate": n_sub / wall_sub,
        "client_wall_s": wall_client,
        "client_rate": n_client / wall_client,
        "ratio": (n_sub / wall_sub) / (n_client / wall_client),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dcgm_parse", description=__doc__)
    p.add_argument("--samples", type=int, default=3_000_000, help="samples to generate")
    p.add_argument("--repeat", type=int, default=3, help="runs of our parser (best is kept)")
    p.add_argument(
        "--client-samples",
        type=int,
        default=100_000,
        help="samples (first files) prometheus_client parses",
    )
    p.add_argument(
        "--scrape-interval", type=int, default=SCRAPE_S, help="seconds between scrapes (30)"
    )
    p.add_argument("--keep", type=Path, help="write the scrape files here and keep them")
    args = p.parse_args(argv)
    r = run(args.samples, args.repeat, args.client_samples, args.keep, args.scrape_interval)
    cpus = os.cpu_count()
    print(
        f"machine: {platform.machine()}, {cpus} CPUs, Python {platform.python_version()}, "
        f"polars {pl.__version__} ({pl.thread_pool_size()} threads), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"scrape files: {r['files']} files, {r['mb']:.0f} MB, {r['samples']:,} samples "
        f"(generated in {r['generate_s']:.1f} s)"
    )
    print(
        f"fleetledger parse_text:    {r['ours_rate'] / 1e6:6.2f} M samples/s "
        f"({r['ours_wall_s']:.2f} s wall, {r['ours_cpu_s']:.2f} s CPU: "
        f"{r['ours_cpu_rate'] / 1e6:.2f} M samples per CPU-second)"
    )
    print(
        f"on the first {r['sub_files']} files ({r['sub_samples']:,} samples): "
        f"fleetledger {r['ours_sub_rate'] / 1e6:.2f} M samples/s, "
        f"prometheus_client {r['client_rate'] / 1e3:.1f} k samples/s "
        f"({r['client_wall_s']:.1f} s)"
    )
    print(f"speed-up over prometheus_client: {r['ratio']:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
