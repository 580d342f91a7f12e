"""The vLLM servers' serving metrics (kind inference_metrics): one Prometheus text file per
inference pod and day, `sources/gcp/vllm/<day>/<pod>.prom.gz`, every scrape of the pod with its
`# HELP` / `# TYPE` lines and millisecond timestamps (as /federate writes them), and the ground
truth of what they count.

The metrics follow the pod's GPU utilisation (telemetry.py's DCGM samples of its GPUs, at the
node's scrape times), with fixed constants and no random draw (the fleet's shared streams are
untouched, so every other file and figure stays as it was):

- generation tokens in the interval ending at a scrape = TOKENS_PER_GPU_SECOND x the sum over
  the pod's GPUs of their utilisation at that scrape x the scrape interval (rounded);
- requests: the lifetime generation tokens // GENERATION_TOKENS_PER_REQUEST, so a request
  counts once its tokens are done; every LENGTH_EVERY-th request finishes by `length`, the rest
  by `stop`; prompt tokens = PROMPT_TOKENS_PER_REQUEST per request;
- the requests counted are spread over the TTFT, end-to-end and queue-time buckets by fixed
  cumulative shares (`HISTOGRAMS`: a bucket counts floor(requests x share), the `+Inf` bucket
  all of them); `_sum` adds each bucket's requests x a fixed value inside it;
- gauges: requests running = round(64 x the GPUs' mean utilisation), waiting = round(50 x
  (mean − 0.6)) when positive, KV-cache use = 0.95 x mean (a fraction);
- the first sample of a pod reports zeros (the server just started);
- the first server up at day 2, 06:00 UTC (`RESTART_AFTER`) restarts its engine at its first
  scrape from then: from that scrape on every counter and histogram series counts again from
  zero (the scrape reports what was counted since the restart).

Ground truth (`inference_days`): per pod and UTC day of the scrape, the requests, prompt tokens
and generation tokens counted in the intervals ending that day, and the GPU-seconds the pod
held that day (its run's cost that day is those at the node's flat GPU rate).
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from fleetledger.generator.model import DAY, HOUR, Fleet, Run
from fleetledger.generator.telemetry import GpuSeries

MODEL_NAME = "meta-llama/Llama-3.1-70B-Instruct"
TOKENS_PER_GPU_SECOND = 600.0
GENERATION_TOKENS_PER_REQUEST = 250
PROMPT_TOKENS_PER_REQUEST = 800
LENGTH_EVERY = 10
RESTART_AFTER = DAY + 6 * HOUR
RUNNING_PER_UTIL = 64
KV_PER_UTIL = 0.95

#: histogram -> (HELP, finite bucket bounds, cumulative share of requests at each bound, the
#: value each bucket's requests add to `_sum` (the last one for the +Inf bucket))
HISTOGRAMS: dict[str, tuple[str, tuple[float, ...], tuple[float, ...], tuple[float, ...]]] = {
    "vllm:time_to_first_token_seconds": (
        "Histogram of time to first token in seconds.",
        (0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        (0.10, 0.35, 0.75, 0.92, 0.98, 0.995),
        (0.03, 0.075, 0.175, 0.375, 0.75, 1.75, 4.0),
    ),
    "vllm:e2e_request_latency_seconds": (
        "Histogram of end to end request latency in seconds.",
        (1.0, 2.5, 5.0, 10.0, 20.0, 40.0),
        (0.05, 0.2, 0.55, 0.85, 0.97, 0.995),
        (0.7, 1.75, 3.75, 7.5, 15.0, 30.0, 60.0),
    ),
    "vllm:request_queue_time_seconds": (
        "Histogram of time spent in WAITING phase for request.",
        (0.01, 0.05, 0.1, 0.5, 1.0),
        (0.6, 0.8, 0.9, 0.98, 0.995),
        (0.005, 0.03, 0.075, 0.3, 0.75, 2.0),
    ),
}
COUNTERS = (
    ("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
    ("vllm:generation_tokens_total", "Number of generation tokens processed."),
    ("vllm:request_success_total", "Count of successfully processed requests."),
)
GAUGES = (
    ("vllm:num_requests_running", "Number of requests in model execution batches."),
    ("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
    ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
)
FINISHED_REASONS = ("stop", "length", "abort")
COUNTERS_NAMES = tuple(name for name, _ in COUNTERS)


def vllm_runs(fleet: Fleet) -> list[Run]:
    """The inference pods that run vLLM, in the fleet's order."""
    return [
        r
        for r in fleet.runs
        if r.scheduler == "kubernetes" and r.labels.get("app") == "vllm" and r.start is not None
    ]


def _labels(run: Run, host: str, i: int) -> str:
    return (
        f'model_name="{MODEL_NAME}",namespace="{run.queue}",pod="{run.pod_name}",'
        f'node="{host}",instance="10.8.{i}.{10 + i}:8000",job="vllm"'
    )


def _increments(run: Run, series: list[GpuSeries], fleet: Fleet) -> dict[str, np.ndarray]:
    """Per scrape of the pod: the times, what each counter counted since the previous scrape
    (zero at the first) and the gauges."""
    end = run.end if run.end is not None else fleet.t1
    times = series[0].times
    m = (times >= run.start) & (times < end)  # type: ignore[operator]
    t = times[m]
    util = np.sum([s.util_signal[m] for s in series], axis=0)
    gen = np.rint(TOKENS_PER_GPU_SECOND * util * fleet.scrape_interval).astype(np.int64)
    if gen.size:
        gen[0] = 0
    life_gen = np.cumsum(gen)
    life_req = life_gen // GENERATION_TOKENS_PER_REQUEST
    req = np.diff(life_req, prepend=0)
    length = np.diff(life_req // LENGTH_EVERY, prepend=0)
    mean = util / len(series)
    out = {
        "t": t,
        "generation": gen,
        "requests": req,
        "prompt": req * PROMPT_TOKENS_PER_REQUEST,
        "stop": req - length,
        "length": length,
        "abort": np.zeros(t.size, dtype=np.int64),
        "running": np.rint(RUNNING_PER_UTIL * mean).astype(np.int64),
        "waiting": np.maximum(0, np.rint(50 * (mean - 0.6))).astype(np.int64),
        "kv": np.round(np.minimum(1.0, KV_PER_UTIL * mean), 4),
    }
    return out


def _histogram(requests: np.ndarray, shares: tuple[float, ...], values: tuple[float, ...]):
    """A histogram's exported buckets (finite bounds, then +Inf) and `_sum` from the exported
    request count: floor(requests x share) at each bound, so the shares hold at every scrape
    and the buckets rise with the bound; `_sum` adds each bucket's requests x its value."""
    cum = np.array([np.floor(requests * s).astype(np.int64) for s in shares] + [requests])
    per = np.diff(cum, axis=0, prepend=0)
    return cum, np.sum(per * np.array(values)[:, None], axis=0)


def _exported(inc: np.ndarray, restart: int | None) -> np.ndarray:
    """A counter's exported values from its increments: the running total, from 0 again at the
    restart scrape (which reports the increment counted since the restart)."""
    if restart is None:
        return np.cumsum(inc, axis=-1)
    before = np.cumsum(inc[..., :restart], axis=-1)
    after = np.cumsum(inc[..., restart:], axis=-1)
    return np.concatenate([before, after], axis=-1)


def _num(values: np.ndarray, decimals: int | None = None) -> pl.Series:
    if decimals is None:
        return pl.Series(values.astype(np.int64)).cast(pl.String)
    return pl.Series(np.round(values.astype(np.float64), decimals)).cast(pl.String)


def scrape_lines(
    run: Run, host: str, i: int, inc: dict[str, np.ndarray], restart: int | None
) -> pl.DataFrame:
    """Every line of the pod's scrapes, with its time `t`, in file order."""
    labels = _labels(run, host, i)
    t = inc["t"]
    ts = pl.Series((t * 1000).astype(np.int64)).cast(pl.String)
    rows: list[pl.DataFrame] = []
    order = 0

    def add(line_head: str | None, values: pl.Series | None, comment: str | None = None) -> None:
        nonlocal order
        if comment is not None:
            line = pl.Series([comment] * t.size)
        else:
            assert line_head is not None and values is not None
            line = pl.concat_str([pl.lit(line_head), values, pl.lit(" "), ts])
        rows.append(
            pl.DataFrame({"t": t, "o": np.full(t.size, order, dtype=np.int32)}).with_columns(
                line=line
            )
        )
        order += 1

    def family(name: str, help_: str, kind: str) -> None:
        add(None, None, f"# HELP {name} {help_}")
        add(None, None, f"# TYPE {name} {kind}")

    for name, help_ in COUNTERS:
        family(name, help_, "counter")
        if name == "vllm:request_success_total":
            for reason in FINISHED_REASONS:
                add(
                    f'{name}{{finished_reason="{reason}",{labels}}} ',
                    _num(_exported(inc[reason], restart)),
                )
        else:
            key = "prompt" if "prompt" in name else "generation"
            add(f"{name}{{{labels}}} ", _num(_exported(inc[key], restart)))
    requests = _exported(inc["requests"], restart)
    for h, (help_, bounds, shares, values) in HISTOGRAMS.items():
        family(h, help_, "histogram")
        buckets, total = _histogram(requests, shares, values)
        for le, counts in zip([*(str(b) for b in bounds), "+Inf"], buckets, strict=True):
            add(f'{h}_bucket{{le="{le}",{labels}}} ', _num(counts))
        add(f"{h}_sum{{{labels}}} ", _num(total, 3))
        add(f"{h}_count{{{labels}}} ", _num(buckets[-1]))
    for (name, help_), key in zip(GAUGES, ("running", "waiting", "kv"), strict=True):
        family(name, help_, "gauge")
        add(f"{name}{{{labels}}} ", _num(inc[key], 4 if key == "kv" else None))
    return pl.concat(rows).sort("t", "o").select("t", "line")


def write_vllm(fleet: Fleet, series_by_host: dict[str, list[GpuSeries]], out: Path) -> list[dict]:
    """Write every vLLM pod's files under `out` (`<day>/<pod>.prom.gz`); return the ground truth
    rows (`inference_days`)."""
    truth: list[dict] = []
    runs = vllm_runs(fleet)
    at = fleet.t0 + RESTART_AFTER
    restarted = next(
        (r for r in runs if r.start <= at < (r.end or fleet.t1)),  # type: ignore[operator]
        None,
    )
    for i, run in enumerate(runs):
        host = run.nodes[0]
        gpus = run.gpu_indices[host]
        series = [s for s in series_by_host[host] if s.gpu in gpus and s.mig_instance is None]
        inc = _increments(run, series, fleet)
        t = inc["t"]
        restart = None
        if run is restarted:
            after = np.flatnonzero(t >= at)
            restart = int(after[0]) if after.size and after[0] > 0 else None
        lines = scrape_lines(run, host, i, inc, restart)
        life_start = int(run.start or 0)
        life_end = run.end if run.end is not None else fleet.t1
        day_of = (t - fleet.t0) // DAY
        for d in np.unique(day_of):
            a = fleet.t0 + int(d) * DAY
            day = datetime.fromtimestamp(a, UTC).strftime("%Y-%m-%d")
            part = lines.filter((pl.col("t") >= a) & (pl.col("t") < a + DAY))
            path = out / day / f"{run.pod_name}.prom.gz"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as raw, gzip.GzipFile("", "wb", 1, raw, mtime=0) as fh:
                fh.write("\n".join(part["line"].to_list()).encode())
                fh.write(b"\n")
            m = day_of == d
            held = max(0, min(life_end, a + DAY) - max(life_start, a))
            truth.append(
                {
                    "run_id": run.run_id,
                    "pod": run.pod_name,
                    "namespace": run.queue,
                    "host": host,
                    "model_name": MODEL_NAME,
                    "day": day,
                    "requests": int(inc["requests"][m].sum()),
                    "prompt_tokens": int(inc["prompt"][m].sum()),
                    "generation_tokens": int(inc["generation"][m].sum()),
                    "restarts": int(restart is not None and bool(m[restart])),
                    # the GPU-seconds the pod held that day (its GPUs x its time in the day)
                    "gpu_seconds": len(gpus) * int(held),
                }
            )
    return truth
