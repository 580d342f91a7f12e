"""A model a vLLM server begins to serve later splits the GPU-hours of its earlier days anew
(docs/metrics.md, "Inference unit economics"; docs/operations.md, "Incremental runs"): the
inference run hours and their marts are stored by day, and a run must recompute them from the
start of an inference run whose served models changed, not only its range. A hand-made fleet,
every figure worked out here by hand.

One on-prem node `n-1` with 1 GPU at 0 % (DCGM every 300 s), no bill. Kubernetes pod
`serving/vllm-0` holds the GPU (1 GPU: the whole node) from 2026-11-20 (D1) 00:00, running; its
vLLM server reports `vllm:num_requests_running` every 300 s. First only D1 is accounted and
landed: the server serves model `a` alone, 24 GPU-hours on D1, all of them `a`'s. Then D2 is
landed and recomputed as `fleetledger run --date D2` does (the range: D2 alone): on D2 the
server serves `a` and `b`. A run serving several models splits each hour's GPU-hours evenly
between every model it served over its life, so D1 changes too: 12 GPU-hours each for `a` and
`b` on D1 and on D2, and `int_inference_recompute_from` says D1, `runs changed`. Left at the
range, D1 would keep 24 GPU-hours of `a` and no row of `b`. Then D3 (2026-11-22) is landed and
recomputed alone: the server serves `a` only, but it served `b` before, so D3's GPU-hours are
still split in two (12 each, `b` with no request), and nothing before D3 changed (`range`):
split by the models of the recomputed days only, D3 would give `a` all 24. The result equals
a full build of the same landed data.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dbt_in_process import dbt_build_models_of_day
from edge_rows import built_rows, dcgm, every, frame, one_node_home

from fleetledger.config_tables import record_accounted_days
from ingest.core.landing import land

D1, D2, D3 = date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)
T1 = datetime(2026, 11, 20, tzinfo=UTC)
T2, T3 = T1 + timedelta(days=1), T1 + timedelta(days=2)
HOUR = timedelta(hours=1)
D1_EPOCH = int(T1.timestamp())

DAILY = (
    "select model_name, day, round(gpu_hours, 6) from main.fct_inference_daily "
    "order by day, model_name"
)
HOURLY = (
    "select model_name, hour, round(gpu_hours, 6), mean_requests_running "
    "from main.fct_inference_hourly "
    "order by hour, model_name"
)
CHOICE = "select from_hour, reason from intermediate.int_inference_recompute_from"
# what the four models need, the copy of the runs they were built from (built after them) and
# the copies the choosers before theirs compare with (int_gpu_hour_states_recompute_from's)
SELECT = (
    "+int_inference_run_inputs +int_gpu_unit_inputs +int_gpu_hour_state_inputs "
    "+int_node_hour_cost_inputs"
)


def _pod(t0: datetime) -> dict[str, Any]:
    """The pod as the day's snapshot (at 23:00) shows it: running."""
    return {
        "cluster": "k1",
        "uid": "u-1",
        "name": "vllm-0",
        "namespace": "serving",
        "node": "n-1",
        "phase": "Running",
        "created_at": T1,
        "started_at": T1,
        "gpus": 1,
        "snapshot_at": t0 + 23 * HOUR,
        "x_source": "k8s",
        "x_source_file": "pods.json",
        "x_line_number": 1,
    }


def _served(day: date, t0: datetime, models: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {
            "time": t,
            "host": "n-1",
            "namespace": "serving",
            "pod": "vllm-0",
            "container": "vllm",
            "model_name": model,
            "metric": "vllm:num_requests_running",
            "value": 1.0,
            "x_source": "vllm",
            "x_source_file": f"vllm-{day}.prom",
            "x_line_number": n,
        }
        for n, (t, model) in enumerate(
            (t, m) for t in every(t0, t0 + 24 * HOUR, 300) for m in models
        )
    ]


def _land(home: Path, day: date, t0: datetime, models: tuple[str, ...]) -> None:
    rows = [dcgm("n-1", 0, t, "DCGM_FI_DEV_GPU_UTIL", 0.0) for t in every(t0, t0 + 24 * HOUR, 300)]
    land(home, "dcgm_samples", "dcgm", f"date={day}", frame("dcgm_samples", rows))
    land(home, "k8s_pods", "k8s", f"date={day}", frame("k8s_pods", [_pod(t0)]))
    served = frame("inference_samples", _served(day, t0, models))
    land(home, "inference_samples", "vllm", f"date={day}", served)


def _land_first(home: Path) -> None:
    serving = {"team": "serving", "match": {"k8s_namespace": ["serving"]}}
    one_node_home(home, gpus=1, teams=[serving], days=[D1])
    _land(home, D1, T1, ("a",))


def _build(home: Path, run_id: str, day: date | None) -> None:
    """A build of `day` alone (as `fleetledger run --date` does), or in full (None)."""
    dbt_build_models_of_day(home, SELECT, run_id=run_id, day=day)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    daily = tmp_path_factory.mktemp("inference_daily")
    _land_first(daily)
    _build(daily, "first", None)
    out: dict[str, Any] = {"first": built_rows(daily, DAILY)}
    for day, t0, models in ((D2, T2, ("a", "b")), (D3, T3, ("a",))):
        record_accounted_days(daily, [day])
        _land(daily, day, t0, models)
        _build(daily, str(day), day)
        out[day] = {q: built_rows(daily, q) for q in (DAILY, HOURLY, CHOICE)}
    full = tmp_path_factory.mktemp("inference_full")
    shutil.copytree(daily / "raw", full / "raw")
    _build(full, "full", None)
    out["full"] = {q: built_rows(full, q) for q in (DAILY, HOURLY)}
    yield out


def test_as_first_built_the_server_served_one_model(homes) -> None:
    assert homes["first"] == [("a", D1, 24.0)]


def test_a_model_served_later_recomputes_the_run_from_its_start(homes) -> None:
    after = homes[D2]
    assert after[CHOICE] == [(D1_EPOCH, "runs changed")]
    # every hour of both days: 1 GPU-hour, half each model's
    assert after[DAILY] == [("a", D1, 12.0), ("b", D1, 12.0), ("a", D2, 12.0), ("b", D2, 12.0)]
    hourly = after[HOURLY]
    assert len(hourly) == 2 * 48 and {r[2] for r in hourly} == {0.5}


def test_a_day_splits_by_every_model_the_run_served_not_the_days_own(homes) -> None:
    after = homes[D3]
    assert after[CHOICE] == [(D1_EPOCH + 2 * 86400, "range")]
    assert after[DAILY][-2:] == [("a", D3, 12.0), ("b", D3, 12.0)]
    # D3's hours: `a` reported 1 request running at every scrape, `b` nothing (its row has
    # the GPU-hours of its half and no server metric)
    d3 = [r for r in after[HOURLY] if r[1] >= T3]
    assert len(d3) == 48 and {r[2] for r in d3} == {0.5}
    assert {(r[0], r[3]) for r in d3} == {("a", 1.0), ("b", None)}


def test_the_inference_marts_equal_a_full_build_of_the_same_data(homes) -> None:
    assert homes[D3][DAILY] == homes["full"][DAILY]
    assert homes[D3][HOURLY] == homes["full"][HOURLY]
