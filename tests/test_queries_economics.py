"""The Economics page's query functions (fleetledger/queries_economics.py) on hand-made marts:
replicas summed per service and day, unit costs from the sums, recommendations by savings and
the kind filter bound as a parameter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import duckdb
import pytest

from fleetledger import queries_economics as qe

D1, D2 = date(2026, 10, 2), date(2026, 10, 3)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(
        """
        create table main.fct_inference_daily (
            run_id varchar, model_name varchar, day date, requests double,
            prompt_tokens double, generation_tokens double, gpu_hours double, cost double,
            ttft_p95_s double, mean_utilization double)
        """
    )
    con.executemany(
        "insert into main.fct_inference_daily values (?,?,?,?,?,?,?,?,?,?)",
        [
            # m on D1: two replicas, 3M + 1M tokens for 30 + 10: 40 x 1e6 / 4e6 = 10 per 1M;
            # TTFT the worse replica's 0.8; utilisation (4 x 0.6 + 4 x 0.2) / 8 = 0.4
            ("r1", "m", D1, 100, 2e6, 1e6, 4.0, 30.0, 0.5, 0.6),
            ("r2", "m", D1, 50, 5e5, 5e5, 4.0, 10.0, 0.8, 0.2),
            ("r1", "m", D2, 10, 0, 0, 4.0, 30.0, None, 0.0),
        ],
    )
    con.execute(
        """
        create table main.fct_recommendations (
            recommendation_id varchar, kind varchar, subject varchar, team varchar,
            owner varchar, action varchar, evidence varchar, days_observed bigint,
            p95_utilization double, p95_memory_gb double, monthly_savings double,
            currency varchar, confidence varchar)
        """
    )
    con.executemany(
        "insert into main.fct_recommendations values (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                "a",
                "release_idle",
                "r9",
                "research",
                "alice",
                "",
                "",
                3,
                0.0,
                1.0,
                100.0,
                "USD",
                "low",
            ),
            ("b", "commitment", "aws", None, None, "", "", 3, 0.9, 70.0, 900.0, "USD", "low"),
            (
                "c",
                "right_size_mig",
                "r8",
                "research",
                "bob",
                "",
                "",
                3,
                0.1,
                5.0,
                50.0,
                "USD",
                "low",
            ),
        ],
    )
    yield con
    con.close()


def test_service_days_sum_the_replicas(con: duckdb.DuckDBPyConnection) -> None:
    df = qe.inference_service_daily(con, D1, D2)
    d1, d2 = df.to_dict("records")
    assert (d1["replicas"], d1["tokens"], d1["cost"]) == (2, 4e6, 40.0)
    assert d1["cost_per_1m_tokens"] == pytest.approx(10.0)
    assert d1["ttft_p95_s"] == pytest.approx(0.8)
    assert d1["mean_utilization"] == pytest.approx(0.4)
    # a day with GPUs and no tokens has no cost per 1M tokens
    assert d2["tokens"] == 0 and d2["cost_per_1m_tokens"] != d2["cost_per_1m_tokens"]
    assert len(qe.inference_service_daily(con, D2, D2)) == 1


def test_recommendations_by_savings_and_kind(con: duckdb.DuckDBPyConnection) -> None:
    assert list(qe.recommendations(con)["recommendation_id"]) == ["b", "a", "c"]
    picked = qe.recommendations(con, ["release_idle", "right_size_mig"])
    assert list(picked["subject"]) == ["r9", "r8"]
    # a kind is a bound value, never SQL
    assert qe.recommendations(con, ["x' or '1'='1"]).empty
