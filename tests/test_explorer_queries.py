"""The cost explorer's query functions and link helper on hand-made tables (no pipeline):
group-by, idle separate vs shared, bound filters, and the URL format of explorer links."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import duckdb
import pandas as pd
import pytest

from fleetledger import queries_runs, queries_spend
from fleetledger.explorer_links import explorer_link

D1, D2 = date(2026, 10, 2), date(2026, 10, 3)

# fct_spend_breakdown rows: day, team, provider, service, instance_type, site, kind, user_name,
# cost, gpu_node_cost, other_cost, shared_idle_cost. The idle row (team null, 45) is shared to
# research and serving pro rata to their direct cost 100 : 50 -> 30 and 15.
ROWS = [
    (D1, "research", "aws", "EC2", "p5", "use2", "training", "alice", 100.0, 100.0, 0.0, 30.0),
    (D1, "serving", "aws", "EC2", "p5", "use2", "inference", "bob", 50.0, 50.0, 0.0, 15.0),
    (D1, None, "aws", "EC2", "p5", "use2", None, None, 45.0, 45.0, 0.0, 0.0),
    (D2, "research", "aws", "Support", None, None, None, None, 20.0, 0.0, 20.0, 0.0),
]


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(
        """
        create table main.fct_spend_breakdown (
            day date, team varchar, provider varchar, service varchar, instance_type varchar,
            site varchar, kind varchar, user_name varchar, cost double, gpu_node_cost double,
            other_cost double, shared_idle_cost double)
        """
    )
    con.executemany("insert into main.fct_spend_breakdown values (?,?,?,?,?,?,?,?,?,?,?,?)", ROWS)
    yield con
    con.close()


def _by(df, column: str) -> dict[str, float]:
    return dict(zip(df[column], df["spend"], strict=True))


def test_idle_separate_is_its_own_group(con: duckdb.DuckDBPyConnection) -> None:
    df = queries_spend.spend_breakdown(con, D1, D2, "team", "separate")
    # research 100 + 20, serving 50, idle 45; total 215
    assert _by(df, "team") == {"research": 120.0, "serving": 50.0, "(idle)": 45.0}
    assert df["share"].sum() == pytest.approx(1.0)
    assert df["team"].tolist() == ["research", "serving", "(idle)"]  # highest spend first


def test_idle_shared_goes_to_the_teams(con: duckdb.DuckDBPyConnection) -> None:
    df = queries_spend.spend_breakdown(con, D1, D2, "team", "shared")
    # research 100 + 30 + 20 = 150, serving 50 + 15 = 65; the same 215 in all
    assert _by(df, "team") == {"research": 150.0, "serving": 65.0}
    assert dict(zip(df["team"], df["shared_idle_cost"], strict=True)) == {
        "research": 30.0,
        "serving": 15.0,
    }


def test_group_by_kind_and_nulls(con: duckdb.DuckDBPyConnection) -> None:
    df = queries_spend.spend_breakdown(con, D1, D2, "kind", "separate")
    assert _by(df, "kind") == {"training": 100.0, "inference": 50.0, "(idle)": 45.0, "(none)": 20.0}


def test_filters_and_date_range(con: duckdb.DuckDBPyConnection) -> None:
    df = queries_spend.spend_breakdown(con, D1, D2, "service", "separate", {"team": ["research"]})
    assert _by(df, "service") == {"EC2": 100.0, "Support": 20.0}
    df = queries_spend.spend_breakdown(con, D2, D2, "team", "separate")
    assert _by(df, "team") == {"research": 20.0}
    daily = queries_spend.spend_breakdown_daily(con, D1, D2, "team", "shared")
    assert {(pd.Timestamp(r.day).date(), r.team): r.spend for r in daily.itertuples()} == {
        (D1, "research"): 130.0,
        (D1, "serving"): 65.0,
        (D2, "research"): 20.0,
    }


def test_filter_values_are_bound_not_formatted(con: duckdb.DuckDBPyConnection) -> None:
    evil = "research') or ('1' = '1"
    assert queries_spend.spend_breakdown(con, D1, D2, "team", "separate", {"team": [evil]}).empty
    with pytest.raises(ValueError, match="unknown dimension"):
        queries_spend.spend_breakdown(con, D1, D2, "team; drop table x", "separate")
    with pytest.raises(ValueError, match="unknown sort"):
        queries_runs.runs_list(con, D1, D2, sort="cost; drop table x")


def test_breakdown_values(con: duckdb.DuckDBPyConnection) -> None:
    assert queries_spend.breakdown_values(con, "user", D1, D2) == ["(none)", "alice", "bob"]


def test_previous_period() -> None:
    assert queries_spend.previous_period(D1, D2) == (date(2026, 9, 30), date(2026, 10, 1))


def test_explorer_link_format() -> None:
    assert explorer_link("https://fl.example/", "overview") == "https://fl.example/"
    assert (
        explorer_link(
            "https://fl.example/app", "costs", group="provider", team=["a b", "c"], start=D1
        )
        == "https://fl.example/app/costs?group=provider&team=a+b&team=c&start=2026-10-02"
    )
    assert (
        explorer_link("https://fl.example", "runs", run="slurm:onprem:88000:1", q=None)
        == "https://fl.example/runs?run=slurm%3Aonprem%3A88000%3A1"
    )
    assert explorer_link("https://x", "data_health") == "https://x/data_health"
    with pytest.raises(ValueError, match="unknown explorer page"):
        explorer_link("https://x", "nowhere")
    with pytest.raises(ValueError, match="unknown explorer URL parameter"):
        explorer_link("https://x", "runs", colour="red")
