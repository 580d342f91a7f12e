"""Numbers at every edge (docs/metrics.md): hand-made fleets the generator never produces, built
by the whole dbt project, with every expected figure worked out here by hand.

The edge fleet: two accounted days, 2026-11-16 (D1) and 2026-11-17 (D2).
- `mono-1` (azure, 8 GPUs): one monthly FOCUS line of $7,200 for November (30 days: $10/h,
  $240/day). Its DCGM telemetry covers only D2. A whole-node Slurm run holds it from D1 12:00
  to D2 12:00.
- `mix-1` (azure, 8 GPUs): daily FOCUS lines of $192 ($8/h, $1 per GPU-hour) for D1 and D2, and
  a zero-length $48 fee on D2 (its node's hours of D2: +$2/h). On D2 00:00-06:00 job 501 holds
  GPUs 0-3 (hpc_job labels on their samples) and job 502 asks for 4 GPUs with no labels; in hour
  05 GPUs 4-7 report no utilisation at all.
- a zero-length $500 purchase with no resource on D2 10:00.
- `rc-1` (on-prem, 2 GPUs, rate card, no resource_id): $2/h of capex, no energy price, no runs,
  no telemetry; a Slurm node event marks it DOWN on D1 06:00-08:00.
- on D2 18:00-20:00 mix-1's GPU 7 reports nothing while its other GPUs do.
- site dc9: a UPS meter (40 kW) and four PDU meters under it (10 kW each), a facility meter
  (60 kW), all read every 15 minutes; site dc8 names its IT meter in `it_meters`.
- `k8s-1` (azure, 1 GPU, no bill): DCGM samples whose `Hostname` is the exporter pod and whose
  `node` label names the node; `ghost-9`: samples of a host that is in no inventory.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import dcgm, every, focus_line, frame, slurm_job

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import land, write_schema_files

D1, D2 = date(2026, 11, 16), date(2026, 11, 17)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
HOUR = timedelta(hours=1)


def edge_config() -> Config:
    return Config(
        inventory=[
            {
                "host": "mono-1",
                "resource_id": "vm-mono",
                "provider": "azure",
                "site": "az1",
                "gpus": 8,
            },
            {
                "host": "mix-1",
                "resource_id": "vm-mix",
                "provider": "azure",
                "site": "az1",
                "gpus": 8,
            },
            {
                "host": "k8s-1",
                "resource_id": "vm-k8s",
                "provider": "azure",
                "site": "az1",
                "gpus": 1,
            },
            {"host": "rc-1", "provider": "onprem", "site": "dc9", "gpus": 2},
        ],
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
        # capex / (12 months x 730 h) = $2 per hour
        rate_cards=[
            {
                "site": "dc9",
                "hosts": ["rc-1"],
                "capex": 17_520.0,
                "amortisation_months": 12,
                "power_price_per_kwh": 0.0,
            }
        ],
        sites={
            "dc9": {"meter_parents": {f"pdu-{i}": "ups-1" for i in range(1, 5)}},
            # `ups-8x` is a typo: the hierarchy names a meter no reading shows (dc8's IT total
            # comes from `it_meters`, so its figures do not depend on it)
            "dc8": {"it_meters": ["ups-8"], "meter_parents": {"pdu-8": "ups-8x"}},
        },
    )


def build_edge_fleet(home: Path) -> None:
    write_schema_files(home)
    write_config_tables(edge_config(), home)
    record_accounted_days(home, [D1, D2])
    nov, dec = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    lines = [
        focus_line("1", "vm-mono", nov, dec, 7200.0),
        focus_line("2", "vm-mix", T1, T2, 192.0),
        focus_line("3", "vm-mix", T2, T2 + timedelta(days=1), 192.0),
        focus_line("4", "vm-mix", T2 + 15 * HOUR, T2 + 15 * HOUR, 48.0),
        focus_line("5", None, T2 + 10 * HOUR, T2 + 10 * HOUR, 500.0),
    ]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))

    samples = []
    # mono-1: D2 only, every 60 s, 90 % busy
    for t in every(T2, T2 + 24 * HOUR, 60):
        samples += [dcgm("mono-1", g, t, "DCGM_FI_DEV_GPU_UTIL", 90.0) for g in range(8)]
    # mix-1: D2 only. GPUs 0-3 labelled job 501 for 00:00-06:00; GPUs 4-7 busy 00:00-05:00,
    # no utilisation at all in hour 05 (power only); everything idle after 06:00
    for t in every(T2, T2 + 24 * HOUR, 60):
        early = t < T2 + 6 * HOUR
        for g in range(8):
            if g < 4:
                labels = {"hpc_job": "501"} if early else {}
                samples.append(
                    dcgm("mix-1", g, t, "DCGM_FI_DEV_GPU_UTIL", 80.0 if early else 0.0, **labels)
                )
            elif g == 7 and T2 + 18 * HOUR <= t < T2 + 20 * HOUR:
                continue  # GPU 7 falls off the bus while the others report
            elif T2 + 5 * HOUR <= t < T2 + 6 * HOUR:
                samples.append(dcgm("mix-1", g, t, "DCGM_FI_DEV_POWER_USAGE", 300.0))
            else:
                samples.append(dcgm("mix-1", g, t, "DCGM_FI_DEV_GPU_UTIL", 70.0 if early else 0.0))
    # k8s-1: the exporter pod is `Hostname`, the node is the `node` label (D2 00:00-01:00)
    for t in every(T2, T2 + HOUR, 60):
        samples.append(
            dcgm(
                "dcgm-exporter-x7k2p",
                0,
                t,
                "DCGM_FI_DEV_GPU_UTIL",
                0.0,
                labels='{"node": "k8s-1"}',
                uuid_host="k8s-1",
                source="k8s-dcgm",
            )
        )
    # ghost-9: in no inventory (10 samples)
    for t in every(T2, T2 + 600 * timedelta(seconds=1), 60):
        samples.append(dcgm("ghost-9", 0, t, "DCGM_FI_DEV_GPU_UTIL", 50.0))
    land(home, "dcgm_samples", "dcgm", f"date={D2}", frame("dcgm_samples", samples))

    jobs = [
        slurm_job("400", "mono-1", 8, T1 + 12 * HOUR, T2 + 12 * HOUR, "research"),
        slurm_job("501", "mix-1", 4, T2, T2 + 6 * HOUR, "research"),
        slurm_job("502", "mix-1", 4, T2, T2 + 6 * HOUR, "nobody-knows"),
    ]
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))
    events = [
        {
            "cluster": "c1",
            "node": "rc-1",
            "time_start": T1 + 6 * HOUR,
            "time_end": T1 + 8 * HOUR,
            "state": "DOWN",
            "reason": "PSU",
            "x_source": "slurm.events",
            "x_source_file": "events.txt",
        }
    ]
    land(
        home, "slurm_node_events", "slurm.events", f"date={D1}", frame("slurm_node_events", events)
    )

    readings = []
    for day_start in (T1, T2):
        for t in every(day_start, day_start + 24 * HOUR, 900):
            readings.append({"time": t, "site": "dc9", "meter": "ups-1", "kind": "it", "kw": 40.0})
            readings += [
                {"time": t, "site": "dc9", "meter": f"pdu-{i}", "kind": "it", "kw": 10.0}
                for i in range(1, 5)
            ]
            readings.append(
                {"time": t, "site": "dc9", "meter": "fac-1", "kind": "facility", "kw": 60.0}
            )
            readings.append({"time": t, "site": "dc8", "meter": "ups-8", "kind": "it", "kw": 30.0})
            readings.append({"time": t, "site": "dc8", "meter": "pdu-8", "kind": "it", "kw": 30.0})
            readings.append(
                {"time": t, "site": "dc8", "meter": "fac-8", "kind": "facility", "kw": 45.0}
            )
    for r in readings:
        r.update(x_source="power", x_source_file="meters.csv")
    land(home, "power_readings", "power", f"date={D1}", frame("power_readings", readings))
    dbt_build(home, "fleetledger", run_id="edge-run")


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("edge_fleet")
    build_edge_fleet(home)
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    yield con
    con.close()


def one(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> Any:
    row = con.execute(sql, list(params)).fetchone()
    return row[0] if row and len(row) == 1 else row


def test_monthly_line_is_240_a_day_whatever_telemetry_covers(edge) -> None:
    """$7,200 over November's 720 hours is $10/h: $240 on D1 (no telemetry at all) and on D2."""
    rows = edge.execute(
        "select cast(hour as date) as d, sum(cost) from fct_gpu_hours where host = 'mono-1' "
        "group by 1 order by 1"
    ).fetchall()
    assert rows == [(D1, pytest.approx(240.0)), (D2, pytest.approx(240.0))]
    # every inventory GPU has a row for every accounted hour: 8 GPUs x 48 h
    assert one(edge, "select count(*) from fct_gpu_hours where host = 'mono-1'") == 8 * 48


def test_a_run_across_a_telemetry_gap_keeps_its_hours(edge) -> None:
    """Job 400 holds all 8 GPUs for 24 h (12 on D1 with no samples: busy + unobserved).
    Its cost is 24 h x $10 = $240; D1 00:00-12:00, unheld and unobserved with no failure
    signal, is unallocated (and a telemetry gap), not down."""
    cost, gpu_hours, busy = edge.execute(
        "select cost, gpu_hours, busy_gpu_hours from fct_run_costs where run_id = 'slurm:c1:400:1'"
    ).fetchone()
    assert cost == pytest.approx(240.0)
    assert busy == pytest.approx(8 * 24)
    down, unalloc, unobs, gap = edge.execute(
        "select sum(down_seconds), sum(unallocated_seconds), sum(unobserved_seconds), "
        "sum(telemetry_gap_seconds) from fct_gpu_hours "
        "where host = 'mono-1' and cast(hour as date) = ?",
        [D1],
    ).fetchone()
    assert down == 0
    assert unalloc == pytest.approx(8 * 12 * 3600)
    assert gap == pytest.approx(8 * 12 * 3600)
    assert unobs == pytest.approx(8 * 24 * 3600)  # 12 h held + 12 h unheld, all unobserved
    msg = one(
        edge,
        "select message from fct_data_health where \"check\" = 'telemetry_gap:mono-1' and day = ?",
        D1,
    )
    assert "96.0 GPU-hours" in msg


def test_labelled_and_unlabelled_runs_hold_the_node_once(edge) -> None:
    """Job 501 (labels on GPUs 0-3) and job 502 (4 GPUs, no labels) on one 8-GPU node for 6 h:
    502 holds GPUs 4-7 only. 48 GPU-hours held in all, no GPU-second twice. mix-1 costs $240 on
    D2 ($192 + the $48 fee): $1.25 a GPU-hour, so 24 GPU-hours are $30 each; hour 05
    of GPUs 4-7 has no utilisation value and counts busy (and unobserved), not lost."""
    over = one(
        edge,
        "select count(*) from fct_gpu_hours where host = 'mix-1' and "
        "busy_seconds + allocated_idle_seconds > 3600.001 or unallocated_seconds < -0.001",
    )
    assert over == 0
    rows = dict(
        edge.execute(
            "select run_id, cost from fct_run_costs where run_id in "
            "('slurm:c1:501:1', 'slurm:c1:502:1')"
        ).fetchall()
    )
    assert rows == {"slurm:c1:501:1": pytest.approx(30.0), "slurm:c1:502:1": pytest.approx(30.0)}
    held = edge.execute(
        "select gpu_index, sum(busy_seconds + allocated_idle_seconds) from fct_gpu_hours "
        "where host = 'mix-1' group by 1 order by 1"
    ).fetchall()
    assert [h for _, h in held] == [pytest.approx(6 * 3600)] * 8
    busy, mapping = edge.execute(
        "select busy_gpu_hours, mapping from fct_run_costs where run_id = 'slurm:c1:502:1'"
    ).fetchone()
    assert (busy, mapping) == (pytest.approx(24.0), "estimated")
    # nobody's rule matched job 502
    assert one(edge, "select team from fct_runs where run_id = 'slurm:c1:502:1'") == "unattributed"


def test_zero_length_lines_count_on_their_day(edge) -> None:
    """The $48 fee on mix-1 is spread over mix-1's 24 hours of D2 (+$2/h: $240 that day); the
    $500 purchase is D2's, unattributed, in fct_daily_spend and in the reconciliation."""
    per_day = dict(
        edge.execute(
            "select cast(hour as date), sum(cost) from fct_gpu_hours where host = 'mix-1' "
            "group by 1"
        ).fetchall()
    )
    assert per_day == {D1: pytest.approx(192.0), D2: pytest.approx(240.0)}
    assert one(
        edge,
        "select sum(cost) from fct_daily_spend where day = ? and team = 'unattributed' "
        "and service = 'Marketplace'",
        D2,
    ) == pytest.approx(500.0)
    # azure on D2: 240 (mono) + 240 (mix) + 500 = 980; D1: 240 + 192 = 432
    spend = dict(
        edge.execute(
            "select day, sum(cost) from fct_daily_spend where provider = 'azure' group by 1"
        ).fetchall()
    )
    assert spend == {D1: pytest.approx(432.0), D2: pytest.approx(980.0)}


def test_idle_with_no_runs_is_unshared(edge) -> None:
    """rc-1 (no resource_id: its rate-card resource is its host) costs $2/h, $48 a day, all
    unallocated: fct_gpu_hours carries it and fct_daily_spend shares it to `unshared`. Per day
    and provider, teams' direct cost + shared idle = the GPU-node bill."""
    per_day = dict(
        edge.execute(
            "select cast(hour as date), sum(cost) from fct_gpu_hours where host = 'rc-1' group by 1"
        ).fetchall()
    )
    assert per_day == {D1: pytest.approx(48.0), D2: pytest.approx(48.0)}
    assert (
        one(
            edge, "select count(*) from fct_billing where x_unattributed and x_source = 'rate_card'"
        )
        == 0
    )
    shared = dict(
        edge.execute(
            "select day, sum(shared_idle_cost) from fct_daily_spend where team = 'unshared' "
            "and provider = 'onprem' group by 1"
        ).fetchall()
    )
    assert shared == {D1: pytest.approx(48.0), D2: pytest.approx(48.0)}
    # azure D1: node bill 432 = job 400's 12 h ($120) + idle 312 shared to research (its only
    # team that day)
    research = edge.execute(
        "select sum(gpu_node_cost), sum(shared_idle_cost) from fct_daily_spend "
        "where day = ? and provider = 'azure' and team = 'research'",
        [D1],
    ).fetchone()
    assert research == (pytest.approx(120.0), pytest.approx(312.0))


def test_meters_never_add_a_child_to_its_parent(edge) -> None:
    """dc9: the UPS (40 kW) is the IT total, its four PDUs are its children: 960 kWh a day, not
    1,920; facility 60 kW = 1,440 kWh; PUE 1.5. Every 15-minute reading keeps its 900 s (the
    last one of D2 too). dc8 names its IT meter: 30 kW = 720 kWh, facility 1,080 kWh."""
    rows = edge.execute(
        "select site, day, it_kwh, facility_kwh, pue from fct_pue_daily order by site, day"
    ).fetchall()
    # the typo in dc8's config is named, never silently applied
    msg = one(
        edge, "select message from fct_data_health where \"check\" = 'meter_not_found:dc8:ups-8x'"
    )
    assert msg.startswith("sites.dc8.meter_parents names meter ups-8x, which has no power readings")
    assert rows == [
        ("dc8", D1, pytest.approx(720.0), pytest.approx(1080.0), pytest.approx(1.5)),
        ("dc8", D2, pytest.approx(720.0), pytest.approx(1080.0), pytest.approx(1.5)),
        ("dc9", D1, pytest.approx(960.0), pytest.approx(1440.0), pytest.approx(1.5)),
        ("dc9", D2, pytest.approx(960.0), pytest.approx(1440.0), pytest.approx(1.5)),
    ]


def test_kubernetes_node_label_and_hosts_outside_the_inventory(edge) -> None:
    """k8s-1's samples (Hostname = the exporter pod) take the `node` label: its GPU is covered
    (unallocated) for D2 00:00-01:00. ghost-9's 10 samples are named in data health."""
    unalloc = one(
        edge,
        "select unallocated_seconds - telemetry_gap_seconds from fct_gpu_hours "
        "where host = 'k8s-1' and hour = ?",
        T2,
    )
    assert unalloc == pytest.approx(3600.0)
    findings = dict(
        edge.execute(
            'select "check", count from fct_data_health where run_id = ?', ["edge-run"]
        ).fetchall()
    )
    assert findings["host_not_in_inventory:ghost-9"] == 10
    assert findings["host_from_label:dcgm-exporter-x7k2p:k8s-1"] == 60


def partial_home(home: Path) -> None:
    """No inventory at all: FOCUS lines, Slurm jobs, and DCGM samples of two unknown hosts."""
    write_schema_files(home)
    write_config_tables(Config(), home)
    record_accounted_days(home, [D2])
    lines = [focus_line("1", "vm-a", T2, T2 + timedelta(days=1), 100.0)]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))
    jobs = [slurm_job("7", "n1", 2, T2, T2 + 3 * HOUR, "research")]
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))
    samples = [
        dcgm(h, 0, T2 + timedelta(minutes=m), "DCGM_FI_DEV_GPU_UTIL", 1.0)
        for h in ("424773df46e0", "551bdf382151")
        for m in range(3)
    ]
    land(home, "dcgm_samples", "dcgm", f"date={D2}", frame("dcgm_samples", samples))
    dbt_build(home, "fleetledger", run_id="partial-run")


def test_partial_fleet_computes_what_it_can_and_names_the_rest(tmp_path: Path) -> None:
    """A FOCUS + Slurm + DCGM warehouse without inventory: $100 of spend on D2 (team
    `unattributed`), 6 allocated GPU-hours for the unattributed Slurm run, and the run summary
    names the two DCGM hosts no inventory node matches."""
    partial_home(tmp_path)
    con = duckdb.connect(str(tmp_path / "build/warehouse.duckdb"), read_only=True)
    try:
        assert con.execute(
            "select day, team, sum(cost) from fct_daily_spend group by 1, 2"
        ).fetchall() == [(D2, "unattributed", pytest.approx(100.0))]
        assert con.execute(
            "select day, team, allocated_gpu_hours from fct_team_gpu_hours_daily"
        ).fetchall() == [(D2, "unattributed", pytest.approx(6.0))]
        assert con.execute("select count(*) from fct_gpu_hours").fetchone()[0] == 0
        msg = con.execute(
            'select message from fct_data_health where "check" = '
            "'mart_not_computed:fct_gpu_hours'"
        ).fetchone()[0]
        assert msg == (
            "fct_gpu_hours: no inventory host matches the 2 DCGM hosts seen: "
            "424773df46e0, 551bdf382151"
        )
    finally:
        con.close()


def test_down_needs_a_failure_signal(edge) -> None:
    """Unheld seconds no sample covers are down only with a failure signal. mix-1 GPU 7: its
    17:59 sample covers to 18:01 (stale after 2 x 60 s), then nothing until 20:00 while the
    other GPUs report: 7,140 s down. rc-1 never reports: down only during its node event
    (2 GPUs x 2 h = 14,400 s on D1), unallocated and unobserved the rest of the time."""
    assert one(
        edge,
        "select sum(down_seconds) from fct_gpu_hours where host = 'mix-1' and gpu_index = 7",
    ) == pytest.approx(7140.0)
    assert (
        one(
            edge,
            "select sum(down_seconds) from fct_gpu_hours where host = 'mix-1' and gpu_index < 7",
        )
        == 0
    )
    down = dict(
        edge.execute(
            "select cast(hour as date), sum(down_seconds) from fct_gpu_hours "
            "where host = 'rc-1' group by 1"
        ).fetchall()
    )
    assert down == {D1: pytest.approx(14400.0), D2: 0}
    assert one(
        edge, "select sum(unobserved_seconds) from fct_gpu_hours where host = 'rc-1'"
    ) == pytest.approx(2 * 48 * 3600 - 14400)
