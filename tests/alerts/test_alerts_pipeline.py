"""Alerts on the demo-shaped fleet through two consecutive daily pipeline runs (the session's
`pipeline_home`, copied): its over-budget team, the weekend-idle notebook and the XID node reach
a local HTTP receiver (Slack-shaped and JSON) and a local SMTP server exactly once per alert and
channel. Run 1 (the fleet's last day) has the HTTP receiver down: the run succeeds and
fct_alert_deliveries shows the failures; run 2 (the same day, the next daily run) has it up and
delivers each alert once; a `fleetledger alerts` run after it sends nothing again. No secret is
in any file, table or stream.

One module fixture: two daily pipeline runs on a copy of the shared fleet (two dbt builds of
one day: about 2 minutes each on 2 cores), then one `fleetledger alerts` run (seconds)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from alerts.receivers import free_port, http_receiver, smtp_receiver
from fleetledger.cli import main
from fleetledger.pipeline import run_pipeline

SLACK_TOKEN = "T0PIPE/B0PIPE/xoxbPipelineSecret31"
HOOK_TOKEN = "pipeline-hook-secret-58"
HOOK_KEY = "pipeline-api-key-secret-12"
SMTP_USER = "pipeline-mail-user-secret"
SMTP_PASSWORD = "pipeline-smtp-password-secret"
SECRETS = (SLACK_TOKEN, HOOK_TOKEN, HOOK_KEY, SMTP_USER, SMTP_PASSWORD)
EVERYWHERE = ["finops-slack", "hooks", "leads"]


def _configure(home: Path, http_port: int, smtp_port: int) -> None:
    cfg = yaml.safe_load((home / "fleetledger.yml").read_text())
    for b in cfg["budgets"]:
        b["channels"] = EVERYWHERE
    # the older budget form still loads, with a deprecation in the data health
    # (with the forecasts it raises a forecast alert too: it routes everywhere like the rest)
    cfg["budgets"].append(
        {"name": "legacy-data", "team": "data", "monthly_amount": 25000, "channels": EVERYWHERE}
    )
    cfg["alerts"]["retry_base_seconds"] = 0
    cfg["alerts"]["channels"] = [
        {"name": "finops-slack", "kind": "slack", "url": "${SLACK_WEBHOOK_URL}"},
        {"name": "hooks", "kind": "webhook", "url": "${ALERT_WEBHOOK_URL}",
         "headers": {"X-Api-Key": "${HOOK_KEY}"}},
        {"name": "leads", "kind": "email", "to": ["leads@example.com"],
         "from": "fleetledger@example.com",
         "smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none",
                  "username": "${SMTP_USER}", "password": "${SMTP_PASSWORD}"}},
    ]  # fmt: skip
    for rule in cfg["alerts"]["rules"]:
        rule["channels"] = EVERYWHERE
    (home / "fleetledger.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _secrets_in_tables(path: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        columns = con.execute(
            "select table_schema, table_name, column_name from information_schema.columns "
            "where data_type not in ('BIGINT', 'INTEGER', 'DOUBLE', 'FLOAT', 'BOOLEAN', 'DATE', "
            "'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'HUGEINT', 'SMALLINT', 'DECIMAL')"
        ).fetchall()
        hits = []
        for schema, table, column in columns:
            value = f'cast("{column}" as varchar)'
            counts = ", ".join(f"count_if(contains({value}, ?))" for _ in SECRETS)
            row = con.execute(f'select {counts} from "{schema}"."{table}"', list(SECRETS))
            found = row.fetchone() or ()
            hits += [
                (f"{schema}.{table}.{column}", s) for s, n in zip(SECRETS, found, strict=False) if n
            ]
        return hits
    finally:
        con.close()


MARTS = ("fct_alerts", "fct_alert_deliveries", "fct_budget_status", "fct_data_health")


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {f"main.{t}": con.execute(f"select * from main.{t}").fetchall() for t in MARTS}
    finally:
        con.close()


@pytest.fixture(scope="module")
def alert_home(
    pipeline_home: Path,
    ground_truth: dict,
    fleet_window: tuple[date, date],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("alert_home")
    shutil.copytree(pipeline_home, home, dirs_exist_ok=True)
    shutil.rmtree(home / "alerts", ignore_errors=True)  # the shared run's log deliveries
    port = free_port()  # the HTTP receiver is down for the first run
    out: dict[str, Any] = {"home": home, "truth": ground_truth}
    with pytest.MonkeyPatch.context() as mp, smtp_receiver(SMTP_USER, SMTP_PASSWORD) as smtp:
        mp.setenv("SLACK_WEBHOOK_URL", f"http://127.0.0.1:{port}/slack/{SLACK_TOKEN}")
        mp.setenv("ALERT_WEBHOOK_URL", f"http://127.0.0.1:{port}/hook/{HOOK_TOKEN}")
        mp.setenv("HOOK_KEY", HOOK_KEY)
        mp.setenv("SMTP_USER", SMTP_USER)
        mp.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
        _configure(home, port, smtp.port)
        day = fleet_window[1]
        streams = io.StringIO()
        with contextlib.redirect_stderr(streams), contextlib.redirect_stdout(streams):
            out["result"] = run_pipeline(home, day, day)  # run 1: the receiver is down
            out["first"] = _tables(home / "warehouse.duckdb")
            out["emails_first"] = len(smtp.messages)
            with http_receiver(port) as http:
                out["second_result"] = run_pipeline(home, day, day)  # run 2: it is up
                out["second"] = _tables(home / "warehouse.duckdb")
                out["posts_second"] = list(http.posts)
                out["emails_second"] = len(smtp.messages)
                out["rc"] = main(["alerts", "--home", str(home)])  # nothing is due any more
        out["posts"] = http.posts
        out["emails"] = smtp.messages
        out["streams"] = streams.getvalue()
    return out


def _rows(tables: dict, name: str, columns: list[str]) -> list[dict[str, Any]]:
    return [dict(zip(columns, r, strict=False)) for r in tables[f"main.{name}"]]


ALERT_COLS = ["alert_id", "rule", "kind", "subject", "team", "user_name", "period", "threshold",
              "amount", "currency", "title", "message", "action", "link", "data_through",
              "channels", "muted", "first_raised_at", "resolved_at"]  # fmt: skip
DELIVERY_COLS = ["alert_id", "channel", "attempt", "notice", "attempted_at", "status", "error"]


def test_the_demo_fleet_raises_its_alerts(alert_home: dict[str, Any]) -> None:
    alerts = _rows(alert_home["first"], "fct_alerts", ALERT_COLS)
    truth = alert_home["truth"]["scenarios"]
    budget = [a for a in alerts if a["rule"] == "budget:research-monthly:actual"]
    # the over-budget team: all three thresholds crossed on actual in October
    assert sorted(a["threshold"] for a in budget) == [0.5, 0.8, 1.0]
    assert {a["team"] for a in budget} == {"research"}
    assert all(a["amount"] >= truth["over_budget"]["amount"] for a in budget)
    assert all("Spend through 2026-10-04" in a["message"] for a in budget)
    # the notebook idle over the weekend: ONE alert (one episode), priced, its user named
    nb = [a for a in alerts if a["kind"] == "idle_allocation"]
    nb = [a for a in nb if a["subject"] == truth["idle_notebook"]["run_id"]]
    assert len(nb) == 1 and nb[0]["amount"] > 0 and nb[0]["user_name"]
    # the XID 79 node, on the day of its outage: its one XID is fatal (fatal_min_count 1);
    # dgx-01's single stray XID 63 that day (not fatal, under min_count 2) raises nothing
    xid = {(a["subject"], a["period"]) for a in alerts if a["kind"] == "xid_spike"}
    host, day = truth["xid79_outage"]["host"], truth["xid79_outage"]["start"][:10]
    assert (host, day) in xid
    assert not any(s == "dgx-01" for s, _d in xid)
    # the outage took the node's 8 GPUs down for 5 h 20 min: ONE gpu_down alert, subject the
    # host, from the outage's hour, the 8 GPUs listed, priced at all of their down seconds
    down = [a for a in alerts if a["kind"] == "gpu_down"]
    assert [(a["subject"], a["period"]) for a in down] == [
        (host, truth["xid79_outage"]["start"][:13] + ":00:00Z")
    ]
    assert "8 GPUs (0, 1, 2, 3, 4, 5, 6, 7)" in down[0]["title"]
    down_cost = [
        r
        for r in alert_home["truth"]["idle_by_day_host_cause"]
        if r["host"] == host and r["cause"] == "down"
    ]
    assert down[0]["amount"] == pytest.approx(sum(r["cost"] for r in down_cost), abs=0.05)
    status = alert_home["first"]["main.fct_budget_status"]
    assert len(status) >= 5  # one row per budget and period in the data


def test_receiver_down_the_run_succeeds_and_records_the_failure(alert_home: dict) -> None:
    deliveries = _rows(alert_home["first"], "fct_alert_deliveries", DELIVERY_COLS)
    alerts = _rows(alert_home["first"], "fct_alerts", ALERT_COLS)
    http = [d for d in deliveries if d["channel"] in ("finops-slack", "hooks")]
    assert http and {d["status"] for d in http} == {"failed"}
    assert all(d["error"] for d in http)
    mail = [d for d in deliveries if d["channel"] == "leads"]
    assert {d["status"] for d in mail} == {"sent"}
    # one email per alert (every alert routes to every channel)
    assert alert_home["emails_first"] == len(mail) == len({d["alert_id"] for d in mail})
    assert len(mail) == len([a for a in alerts if not a["muted"]])
    health = alert_home["first"]["main.fct_data_health"]
    checks = {(r[2], r[4]) for r in health if r[1] == alert_home["result"].run_id}
    assert ("alerts", "alert_delivery:finops-slack") in checks
    assert ("config", "config_deprecated") in checks


def test_the_next_daily_run_delivers_each_alert_once(alert_home: dict) -> None:
    assert alert_home["second_result"].run_id != alert_home["result"].run_id
    first = _rows(alert_home["first"], "fct_alerts", ALERT_COLS)
    second = _rows(alert_home["second"], "fct_alerts", ALERT_COLS)
    ids = sorted(a["alert_id"] for a in first)
    # the same alerts, no duplicates, and nothing resolved that still holds (resolved_at as in
    # run 1: the ended episodes keep their end, the open conditions stay open)
    assert sorted(a["alert_id"] for a in second) == ids and len(set(ids)) == len(ids)
    assert {a["alert_id"]: a["resolved_at"] for a in second} == {
        a["alert_id"]: a["resolved_at"] for a in first
    }
    # run 2 posted each alert once to each HTTP channel
    posts = alert_home["posts_second"]
    hooks = [b for p, _h, b in posts if p.startswith("/hook/")]
    slack = [b for p, _h, b in posts if p.startswith("/slack/")]
    assert sorted(b["alert_id"] for b in hooks) == ids
    slack_ids = sorted(b["blocks"][-1]["elements"][0]["text"].split()[-1] for b in slack)
    assert slack_ids == ids and all(b["text"] for b in slack)
    # the published fct_alert_deliveries: per alert and HTTP channel, attempt 1 failed (run 1)
    # then attempt 2 sent (run 2); the email went once, in run 1
    deliveries = _rows(alert_home["second"], "fct_alert_deliveries", DELIVERY_COLS)
    for channel in ("finops-slack", "hooks"):
        for aid in ids:
            mine = sorted(
                (d["attempt"], d["status"])
                for d in deliveries
                if d["alert_id"] == aid and d["channel"] == channel and d["notice"] == "raised"
            )
            assert mine == [(1, "failed"), (2, "sent")], (channel, aid)
    mail = [d for d in deliveries if d["channel"] == "leads"]
    assert sorted((d["alert_id"], d["attempt"], d["status"]) for d in mail) == [
        (aid, 1, "sent") for aid in ids
    ]
    assert alert_home["emails_second"] == alert_home["emails_first"] == len(ids)
    # a `fleetledger alerts` run after it sends nothing again
    assert alert_home["rc"] == 0
    assert len(alert_home["posts"]) == len(posts) == 2 * len(ids)
    assert len(alert_home["emails"]) == alert_home["emails_first"]


def test_no_secret_in_files_tables_or_streams(alert_home: dict) -> None:
    home: Path = alert_home["home"]
    found = []
    # every file the runs wrote (logs, the alert store, Dagster's event log and compute logs);
    # the source files and their landings are inputs (their findings are in fct_data_health)
    for path in home.rglob("*"):
        inputs = path.relative_to(home).parts[0] in ("sources", "raw")
        if path.is_file() and not inputs and not path.name.endswith((".duckdb", ".wal")):
            data = path.read_bytes()
            found += [(str(path), s) for s in SECRETS if s.encode() in data]
    # every text column of every table of both warehouses
    for db in (home / "warehouse.duckdb", home / "build" / "warehouse.duckdb"):
        found += [(f"{db}: {where}", s) for where, s in _secrets_in_tables(db)]
    bodies = json.dumps([b for _p, _h, b in alert_home["posts"]], default=str)
    mails = "".join(m.content.decode(errors="replace") for m in alert_home["emails"])
    for label, text in (("streams", alert_home["streams"]), ("bodies", bodies), ("mails", mails)):
        found += [(label, s) for s in SECRETS if s in text]
    assert found == []
