"""Corpus cases for the telemetry kinds: `dcgm` (scrape files, long exports, range JSON),
`power` (meter CSV, node GPU roll-ups) and `inference_metrics` (vLLM scrapes). Counts:
`inputs.prom` gives 4 good samples per host-day (2 GPUs x 00:00 and 01:00);
`inputs.power_rows(n)` gives n good readings."""

from __future__ import annotations

import gzip
from pathlib import Path

from inputs import (
    D1,
    D2,
    POWER_HEADER,
    dcgm_day,
    dcgm_line,
    dcgm_source,
    ms,
    power_file,
    power_rows,
    power_source,
    prom,
    samples_dir,
    source,
    write,
    write_gz,
)
from runner import Case, Expect, Setup

DAYS = (D1,)


def _dcgm(extra: list[str], **options: object) -> object:
    def build(folder: Path) -> Setup:
        dcgm_day(folder, extra)
        return Setup({"sources": [dcgm_source(**options)]}, "dcgm", DAYS)

    return build


def _dcgm_file(data: bytes) -> object:
    def build(folder: Path) -> Setup:
        write_gz(folder / "dcgm" / D1.isoformat() / "n1.prom.gz", data)
        return Setup({"sources": [dcgm_source()]}, "dcgm", DAYS)

    return build


def _truncated_gzip(folder: Path) -> Setup:
    data = gzip.compress(prom("n1", D1).encode())
    write(folder / "dcgm" / D1.isoformat() / "n1.prom.gz", data[: len(data) // 2])
    return Setup({"sources": [dcgm_source()]}, "dcgm", DAYS)


def _long_csv_without_value(folder: Path) -> Setup:
    write(
        folder / "long" / "export.csv",
        "timestamp,hostname,gpu,metric\n2026-11-02T00:00:00Z,n1,0,x\n",
    )
    return Setup(
        {"sources": [source("dcgm", "dcgm", "long/*.csv", format="long_csv")]}, "dcgm", DAYS
    )


def _range_json_broken(folder: Path) -> Setup:
    write(folder / "range" / "util.json", '{"status": "success", "data": {"resultType": "matr')
    src = source("dcgm", "dcgm", "range/*.json", format="prometheus_range_json")
    return Setup({"sources": [src]}, "dcgm", DAYS)


def _whole_location_other_day(folder: Path) -> Setup:
    # one file, no {date}: 4 samples of D1 and 4 of D1 + 1; only D1 is asked for
    text = prom("n1", D1) + prom("n1", D1.replace(day=D1.day + 1))
    write(folder / "all" / "n1.prom", text)
    return Setup({"sources": [source("dcgm", "dcgm", "all/*.prom")]}, "dcgm", DAYS)


def _empty_scrape_file(folder: Path) -> Setup:
    dcgm_day(folder, [])
    write(folder / "dcgm" / D1.isoformat() / "n2.prom.gz", b"")  # 0 bytes
    return Setup({"sources": [dcgm_source()]}, "dcgm", DAYS)


def _typo_option(folder: Path) -> Setup:
    dcgm_day(folder, [])
    return Setup({"sources": [dcgm_source(node_lable="node")]}, "dcgm", DAYS)


def _missing_day_keeps_landed(folder: Path) -> Setup:
    # a first run lands D1 (3 readings); the location then moves to a folder that holds only
    # D2's file: D1 has no file there, and for a {date} location that is a gap (a warning), never
    # a deletion (a location matching no file at all is an error: `glob-matching-nothing`)
    power_file(folder, power_rows(n=3))
    write(
        folder / "power-moved" / f"power-{D2}.csv",
        "\n".join([POWER_HEADER, *power_rows(D2, n=2)]) + "\n",
    )
    good = {"sources": [power_source()]}
    bad = {"sources": [power_source("power-moved/power-{date}.csv")]}
    return Setup(bad, "power", DAYS, before=good)


def _glob_matching_nothing(folder: Path) -> Setup:
    dcgm_day(folder, [])
    good = {"sources": [dcgm_source()]}
    bad = {"sources": [source("dcgm", "dcgm", "dcgm-typo/*/*.prom.gz")]}
    return Setup(bad, "dcgm", DAYS, before=good)


def _rollup_sample(bad_line: str | None) -> object:
    """The Cornell cbsugpu08 hourly export (real sample), its 15 hourly rows of 2025-10-20; with
    `bad_line`, the 01:00 row's powerave becomes that text."""

    def build(folder: Path) -> Setup:
        sample = (
            samples_dir() / "power" / "cornell-biohpc-cbsugpu08-hourly-gpu-power-util-first2000.tsv"
        )
        lines = sample.read_text().splitlines()
        # the header and that day's rows (rejected rows are filed under the day most of their
        # file's rows fall on)
        text = "\n".join([lines[0], *(x for x in lines if "\t2025-10-20 " in x)]) + "\n"
        if bad_line is not None:
            text = text.replace(
                "2025-10-20 01:00:00.000\t50.03875", f"2025-10-20 01:00:00.000\t{bad_line}"
            )
        write(folder / "rollup" / "cbsugpu08.tsv", text)
        src = source("rollup", "power", "rollup/*.tsv", format="node_gpu_rollup")
        return Setup({"sources": [src]}, "rollup", (D1.replace(year=2025, month=10, day=20),))

    return build


def _power(rows: list[str], **options: object) -> object:
    def build(folder: Path) -> Setup:
        power_file(folder, rows)
        dcgm_day(folder, [])
        return Setup({"sources": [power_source(**options), dcgm_source()]}, "power", DAYS)

    return build


def _power_bytes(data: bytes) -> object:
    def build(folder: Path) -> Setup:
        write(folder / "power" / f"power-{D1}.csv", data)
        return Setup({"sources": [power_source()]}, "power", DAYS)

    return build


T = ms(D1, 2)


def _vllm(extra: list[str]) -> object:
    """A vLLM scrape of day 1 with 2 good samples (a gauge and a counter of pod p1) and
    `extra` lines after them (`{t}`: the samples' timestamp)."""

    def build(folder: Path) -> Setup:
        t = ms(D1, 0)
        labels = 'model_name="m",namespace="ns",pod="p1"'
        lines = [
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} 2 {t}",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} 800 {t}",
            *(line.replace("{t}", str(t)) for line in extra),
        ]
        write(folder / "vllm" / D1.isoformat() / "p1.prom", "\n".join(lines) + "\n")
        config = {"sources": [source("vllm", "inference_metrics", "vllm/{date}/*.prom")]}
        return Setup(config, "vllm", DAYS)

    return build


CASES = [
    # --- handled on main
    Case(
        "dcgm",
        "truncated-gzip",
        _truncated_gzip,
        Expect("error", (r"n1\.prom\.gz", r"(?i)corrupt or truncated gzip"), landed=0),
    ),
    Case(
        "dcgm",
        "garbage-line",
        _dcgm(["garbage{ this is not"]),
        Expect("quarantine", landed=4, quarantined=1, reason=r"unparseable sample line"),
    ),
    Case(
        "dcgm",
        "not-prometheus-text",
        _dcgm_file(b'{"not": "prometheus"}\n'),
        Expect("error", (r"n1\.prom\.gz, line 1", r"not Prometheus text"), landed=0),
    ),
    Case(
        "dcgm",
        "int64-blank-dropped",
        _dcgm([dcgm_line("n1", 0, "9223372036854775794", T, "DCGM_FI_DEV_FB_USED")]),
        Expect("dropped", landed=4, quarantined=0, dropped=1),
    ),
    Case(
        "dcgm",
        "sample-without-gpu-labels",
        _dcgm([f"DCGM_FI_DEV_FAN_SPEED 0 {T}"]),
        Expect("quarantine", landed=4, quarantined=1, reason=r"(?i)label|gpu|uuid"),
    ),
    Case(
        "dcgm", "unknown-format", _dcgm([], format="xml"), Expect("error", (r"(?i)format", r"xml"))
    ),
    Case(
        "dcgm",
        "long-csv-without-value-column",
        _long_csv_without_value,
        Expect("error", (r"export\.csv", r"(?i)value|column")),
    ),
    Case(
        "dcgm",
        "range-json-cut-off",
        _range_json_broken,
        Expect("error", (r"util\.json", r"(?i)json")),
    ),
    Case(
        "inference_metrics",
        "garbage-line",
        _vllm(["vllm:num_requests_waiting{ not a sample"]),
        Expect("quarantine", landed=2, quarantined=1, reason=r"unparseable sample line"),
    ),
    Case(
        "inference_metrics",
        "negative-gauge",
        _vllm(['vllm:num_requests_waiting{model_name="m",namespace="ns",pod="p1"} -1 {t}']),
        Expect("quarantine", landed=2, quarantined=1, reason=r"is negative"),
    ),
    Case(
        "power",
        "negative-kw",
        _power([*power_rows(n=3), f"{D1}T00:05:00Z,dc1,main,facility,-5"]),
        Expect(
            "quarantine", landed=3, quarantined=1, reason=r"(?i)negative|kw", others={"dcgm": 4}
        ),
    ),
    Case(
        "power",
        "kw-not-a-number",
        _power([*power_rows(n=3), f"{D1}T00:05:00Z,dc1,main,facility,lots"]),
        Expect("quarantine", landed=3, quarantined=1, reason=r"(?i)kw|number|numeric"),
    ),
    Case(
        "power",
        "timestamp-not-a-time",
        _power([*power_rows(n=2), "yesterday,dc1,main,facility,100"]),
        Expect("quarantine", landed=2, quarantined=1, reason=r"(?i)time"),
    ),
    Case(
        "power",
        "csv-lacks-columns",
        _power_bytes(b"time,site,kw\n2026-11-02T00:00:00Z,dc1,100\n"),
        Expect("error", (rf"power-{D1}\.csv, line 1", r"lacks columns"), landed=0),
    ),
    Case(
        "power",
        "unknown-format",
        _power(power_rows(), format="xml"),
        Expect("error", (r"power format 'xml' is not (supported|known)",)),
    ),
    Case(
        "power",
        "rollup-value-not-a-number",
        _rollup_sample("n/a"),
        Expect("quarantine", landed=14, quarantined=1, reason=r"(?i)power|number|numeric"),
    ),
    Case(
        "power",
        "rollup-sample-lands",
        _rollup_sample(None),
        Expect("landed", landed=15, quarantined=0),
    ),
    # --- issue 11 findings, pending their fixes
    Case(
        "dcgm",
        "line-cut-inside-timestamp",
        _dcgm([dcgm_line("n1", 0, "50", T)[:-9]]),  # ... 50 1793 -> 1970
        Expect("quarantine", landed=4, quarantined=1, reason=r"(?i)day|date|partition|time"),
    ),
    Case(
        "dcgm",
        "line-cut-after-value",
        _dcgm([dcgm_line("n1", 0, "50", None)]),  # takes the file's mtime: now, not D1
        Expect("quarantine", landed=4, quarantined=1, reason=r"(?i)day|date|partition|time"),
    ),
    Case(
        "dcgm",
        "int32-blank-dropped",
        _dcgm([dcgm_line("n1", 0, "2147483632", T, "DCGM_FI_DEV_FB_USED")]),
        Expect("dropped", landed=4, quarantined=0, dropped=1),
    ),
    Case(
        "dcgm",
        "fp64-blank-dropped",
        _dcgm([dcgm_line("n1", 0, "140737488355328", T, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")]),
        Expect("dropped", landed=4, quarantined=0, dropped=1),
    ),
    Case(
        "dcgm",
        "power-over-2kw",
        _dcgm([dcgm_line("n1", 0, "5000", T, "DCGM_FI_DEV_POWER_USAGE")]),
        Expect("quarantine", landed=4, quarantined=1, reason=r"(?i)power|impossible|range|exceed"),
    ),
    Case(
        "dcgm",
        "utilisation-over-100",
        _dcgm([dcgm_line("n1", 1, "150", T)]),
        Expect("quarantine", landed=4, quarantined=1, reason=r"(?i)util|impossible|range|100"),
    ),
    Case(
        "dcgm",
        "empty-file-is-a-gap",
        _empty_scrape_file,
        Expect(
            "finding", landed=4, quarantined=0, finding=(r"(?i)empty|gap|unobserved", "warning")
        ),
    ),
    Case(
        "dcgm",
        "duplicated-hour-dropped",
        # the 4 samples again (a duplicated scrape), and GPU 0 at 02:00 shared by jobs 7 and 8:
        # 4 + 2 land, 4 duplicates dropped and counted
        _dcgm(
            [
                *prom("n1", D1).splitlines()[1:],
                dcgm_line("n1", 0, "40", T, hpc_job="7"),
                dcgm_line("n1", 0, "60", T, hpc_job="8"),
            ]
        ),
        Expect("finding", landed=6, quarantined=0, finding=(r"(?i)dup", "")),
    ),
    Case(
        "dcgm",
        "option-typo",
        _typo_option,
        Expect("error", (r"dcgm", r"node_lable", r"node_label")),
    ),
    Case(
        "dcgm",
        "glob-matching-nothing-keeps-landed",
        _glob_matching_nothing,
        Expect("error", (r"dcgm", r"dcgm-typo"), landed=4),
    ),
    Case(
        "power",
        "missing-day-is-a-gap",
        _missing_day_keeps_landed,
        Expect("finding", landed=3, finding=(r"(?i)gap|missing|no.?files|empty", "warning")),
    ),
    Case(
        "power",
        "non-utf8-bytes",
        _power_bytes(
            (f"timestamp,site,meter,kind,kw\n{D1}T00:00:00Z,dc1,main,facility,100\n").encode()
            + f"{D1}T00:01:00Z,dc\xff1,main,facility,100\n".encode("latin-1")
        ),
        Expect("flagged", landed=1, quarantined=1, reason=r"(?i)utf|encod|decod|byte"),
    ),
    Case(
        "dcgm",
        "rows-outside-requested-days",
        _whole_location_other_day,
        Expect("finding", landed=4, finding=(r"(?i)outside|other.?day|not.?landed", "")),
    ),
]
