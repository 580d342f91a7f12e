"""Every source option a reader reads is declared by its kind (`KindSpec.options`), every
declared option is read by some reader of the kind, and a source setting any other option is
refused when the config loads, naming the source, the option and the nearest known one
(issue 11, finding 6: `node_lable` was ignored and the GKE samples went to the exporter pods).

The readers' option reads are found in the source: every `options.get("x")`, `options["x"]`,
`(options or {}).get("x")`, `<obj>.options.get("x")` and `f(options, "x", ...)` in `ingest/`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetledger.config import ConfigError, load_config
from ingest import registry

REPO = Path(__file__).resolve().parents[1]

#: module → the (kind, format, location) contexts its option reads run in, and optionally
#: the only keys it reads for that context (a helper shared with another kind)
READERS: dict[str, list[tuple[str, str | None, str, set[str] | None]]] = {
    "ingest/billing/aws_cur.py": [("aws_cur", None, "s3://b/export", None)],
    "ingest/billing/s3.py": [("aws_cur", None, "s3://b/export", None)],
    "ingest/billing/azure_cost.py": [("azure_cost", None, "x/*.csv", None)],
    "ingest/billing/focus.py": [("focus", None, "x/*.csv", None)],
    "ingest/billing/focus_ledger.py": [("focus", None, "x/*.csv", None)],
    "ingest/billing/gcp_billing.py": [("gcp_billing", None, "x/*.jsonl", None)],
    "ingest/billing/gcp_bigquery.py": [("gcp_billing", None, "bigquery://p.d.t", None)],
    "ingest/billing/google_auth.py": [
        ("gcp_billing", None, "bigquery://p.d.t", None),
        ("gcp_catalog", None, "https://cloudbilling.googleapis.com", None),
    ],
    "ingest/billing/gcp_catalog.py": [
        ("gcp_catalog", None, "https://cloudbilling.googleapis.com", None)
    ],
    "ingest/scheduler/kinds.py": [("kubernetes", "pods", "x/*.json", None)],
    "ingest/scheduler/k8s_dumps.py": [
        ("kubernetes", "pods", "x/*.json", None),
        ("kueue", None, "x/*.json", None),
    ],
    "ingest/scheduler/kubernetes.py": [("kubernetes", "pods", "x/*.json", None)],
    "ingest/scheduler/kubernetes_ksm.py": [("kubernetes", "kube_state_metrics", "x/*", None)],
    "ingest/scheduler/kueue.py": [("kueue", None, "x/*.json", None)],
    "ingest/scheduler/landing.py": [("slurm", None, "x/*.txt", None)],
    "ingest/scheduler/slurm.py": [("slurm", None, "x/*.txt", None)],
    "ingest/scheduler/slurm_command.py": [("slurm", None, "sacct://", None)],
    "ingest/scheduler/slurm_events.py": [("slurm", None, "x/*.txt", None)],
    "ingest/scheduler/run_logs.py": [("run_logs", None, "logs/*.out", None)],
    "ingest/telemetry/kinds.py": [
        ("dcgm", "prometheus_api", "http://prom:9090", None),
        ("inference_metrics", "prometheus_api", "http://prom:9090", None),
    ],
    "ingest/telemetry/vllm.py": [
        ("inference_metrics", "prometheus_text", "x/*.prom", None),
        ("inference_metrics", "prometheus_range_json", "x/*.json", None),
    ],
    "ingest/telemetry/dcgm_formats.py": [("dcgm", None, "x/*.prom", None)],
    "ingest/telemetry/dcgm.py": [
        ("dcgm", "prometheus_text", "x/*.prom", None),
        ("dcgm", "openmetrics", "x/*.prom", None),
        # kube-state-metrics scrapes take their default time from dcgm._default_time
        ("kubernetes", "kube_state_metrics", "x/*", {"scrape_time"}),
        # vLLM scrapes too (ingest/telemetry/vllm.py)
        ("inference_metrics", "prometheus_text", "x/*.prom", {"scrape_time"}),
    ],
    "ingest/telemetry/dcgm_json.py": [("dcgm", "prometheus_range_json", "x/*.json", None)],
    "ingest/telemetry/dcgm_long.py": [
        ("dcgm", "long_csv", "x/*.csv", None),
        ("dcgm", "long_parquet", "x/*.parquet", None),
    ],
    "ingest/telemetry/dcgm_nvsmi.py": [("dcgm", "nvidia_smi_csv", "x/*.csv", None)],
    "ingest/telemetry/dcgm_prometheus.py": [
        ("dcgm", "prometheus_api", "http://p:9090", None),
        ("inference_metrics", "prometheus_api", "http://p:9090", None),
    ],
    "ingest/telemetry/power.py": [
        ("power", "meter_csv", "x/*.csv", None),
        ("power", "node_gpu_rollup", "x/*.csv", None),
    ],
    "ingest/telemetry/power_rollup.py": [("power", "node_gpu_rollup", "x/*.csv", None)],
    "ingest/telemetry/dcgm_checks.py": [
        ("dcgm", None, "x/*.prom", None),
        # the day window of vLLM files (ingest/telemetry/vllm.py)
        ("inference_metrics", None, "x/*.prom", {"day_slack_seconds"}),
    ],
    "ingest/scheduler/time_rules.py": [("slurm", None, "x/*.txt", None)],
    # option `encoding` of the text readers (ingest/core/text.py: encoding_option)
    "ingest/core/text.py": [
        ("slurm", None, "x/*.txt", None),
        ("kubernetes", "pods", "x/*.json", None),
        ("kueue", None, "x/*.json", None),
        ("focus", None, "x/*.csv", None),
        ("azure_cost", None, "x/*.csv", None),
        ("oci_cost", None, "x/*.csv", None),
        ("gcp_billing", "jsonl", "x/*.jsonl", None),
    ],
}
#: modules that read an option for every kind alike: `format` picks the landing table
GENERIC = {"ingest/core/spec.py": {"format"}}


def _is_options(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "options"
    if isinstance(node, ast.Attribute):
        return node.attr == "options"
    if isinstance(node, ast.BoolOp):  # (options or {})
        return _is_options(node.values[0])
    return False


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def option_reads(path: Path) -> set[str]:
    """The option names a module reads (module docstring)."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "pop", "setdefault") and _is_options(node.func.value):
                if node.args and (key := _literal(node.args[0])):
                    keys.add(key)
                continue
        if isinstance(node, ast.Subscript) and _is_options(node.value):
            if key := _literal(node.slice):
                keys.add(key)
        if isinstance(node, ast.Call) and len(node.args) >= 2 and _is_options(node.args[0]):
            if key := _literal(node.args[1]):
                keys.add(key)
    return keys


def all_option_reads() -> dict[str, set[str]]:
    found = {}
    for path in sorted((REPO / "ingest").rglob("*.py")):
        keys = option_reads(path)
        if keys:
            found[str(path.relative_to(REPO))] = keys
    return found


def _allowed(kind: str, fmt: str | None, location: str) -> set[str]:
    spec = registry.spec_for(kind)
    options = {} if fmt is None else {"format": fmt}
    if fmt is None and spec.options.formats:
        # a reader that runs for every format of the kind
        return set(spec.options.common) | {"format"} | _scheme(spec, location)
    return spec.options.allowed(options, location)


def _scheme(spec: Any, location: str) -> set[str]:
    scheme = location.split("://", 1)[0] if "://" in location else None
    return set(spec.options.schemes.get(scheme, ()))


def test_the_scan_finds_the_reads_it_should(tmp_path: Path) -> None:
    """The scanner itself: each read form is found, other dicts are not."""
    src = tmp_path / "probe.py"
    src.write_text(
        "def f(options, ctx, opts, g):\n"
        "    a = options.get('a_opt')\n"
        "    b = options['b_opt']\n"
        "    c = (options or {}).get('c_opt')\n"
        "    d = ctx.source.options.get('d_opt')\n"
        "    e = g(options, 'e_opt', 1)\n"
        "    return opts.get('not_an_option'), opts['neither']\n"
    )
    assert option_reads(src) == {"a_opt", "b_opt", "c_opt", "d_opt", "e_opt"}


def test_every_option_a_reader_reads_is_declared_by_its_kind() -> None:
    reads = all_option_reads()
    unmapped = sorted(set(reads) - set(READERS) - set(GENERIC))
    assert not unmapped, f"modules read options but are not mapped to their kinds: {unmapped}"
    undeclared = []
    for module, keys in reads.items():
        if module in GENERIC:
            assert keys <= GENERIC[module], module
            continue
        for kind, fmt, location, only in READERS[module]:
            read = keys if only is None else keys & only
            missing = read - _allowed(kind, fmt, location)
            if missing:
                undeclared.append((module, kind, fmt, sorted(missing)))
    assert not undeclared, undeclared


def test_every_declared_option_is_read_by_the_kind() -> None:
    reads = all_option_reads()
    for spec in registry.specs():
        read: set[str] = set()
        for module, contexts in READERS.items():
            for kind, _fmt, _location, only in contexts:
                if kind == spec.kind:
                    read |= reads.get(module, set()) & (only or reads.get(module, set()))
        declared = spec.options.names()
        assert declared <= read, (spec.kind, sorted(declared - read))


def _config(tmp_path: Path, source: dict[str, Any]) -> Path:
    path = tmp_path / "fleetledger.yml"
    path.write_text(yaml.safe_dump({"sources": [source]}))
    return path


def test_an_option_typo_is_a_config_error_naming_source_option_and_nearest(
    tmp_path: Path,
) -> None:
    """The finding: `node_lable` on the GKE DCGM source was ignored; now loading fails."""
    source = {
        "name": "gke-dcgm",
        "kind": "dcgm",
        "location": "dcgm/{date}/*.prom.gz",
        "options": {"format": "prometheus_text", "node_lable": "node"},
    }
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, source))
    msg = str(err.value)
    assert "sources[0]" in msg and "source gke-dcgm" in msg
    assert "unknown option 'node_lable'" in msg and "did you mean 'node_label'?" in msg
    source["options"] = {"format": "prometheus_text", "node_label": "node"}
    assert load_config(_config(tmp_path, source)).sources[0].options["node_label"] == "node"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # an option of another format: named with the formats that read it
        (
            {"kind": "dcgm", "location": "d/*.csv", "options": {"format": "long_csv", "host": "h"}},
            "option host is not read with format long_csv (only with format nvidia_smi_csv)",
        ),
        # an option of the default format is fine, another format's is not
        (
            {"kind": "power", "location": "p/*.csv", "options": {"interval_seconds": 60}},
            "option interval_seconds is not read with format meter_csv",
        ),
        # a format value that does not exist, with the nearest one
        (
            {"kind": "dcgm", "location": "d/*", "options": {"format": "prometheus_txt"}},
            "dcgm format 'prometheus_txt' is not known",
        ),
        # a kind without options
        (
            {"kind": "oci_cost", "location": "o/*.csv", "options": {"format": "csv"}},
            "unknown option 'format' for kind oci_cost (known: encoding)",
        ),
        # bigquery options only for bigquery:// locations
        (
            {"kind": "gcp_billing", "location": "g/*.jsonl", "options": {"page_size": 10}},
            "option page_size is not read with format auto (only with bigquery:// locations)",
        ),
        (
            {"kind": "gcp_billing", "location": "bigquery://p.d.t", "options": {"format": "csv"}},
            "option format is not read for a bigquery:// location",
        ),
        # a slurm typo
        (
            {"kind": "slurm", "location": "s/*.txt", "options": {"timezon": "UTC"}},
            "unknown option 'timezon' for kind slurm; did you mean 'timezone'?",
        ),
        # AWS credentials are refused with where they belong
        (
            {
                "kind": "aws_cur",
                "location": "s3://b/p/e",
                "options": {"access_key": "${AWS_KEY_REF}"},
            },
            "option access_key: credentials are not read from fleetledger.yml",
        ),
    ],
)
def test_options_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: dict[str, Any], expected: str
) -> None:
    monkeypatch.setenv("AWS_KEY_REF", "not-printed")
    with pytest.raises(ConfigError, match="source s:") as err:
        load_config(_config(tmp_path, {"name": "s", **source}))
    assert expected in str(err.value)
    assert "not-printed" not in str(err.value)


def test_every_kind_accepts_its_declared_options(tmp_path: Path) -> None:
    """Each declared option of each format loads (nothing declared is refused)."""
    for spec in registry.specs():
        o = spec.options
        contexts: list[tuple[dict[str, Any], str]] = []
        if o.formats:
            contexts += [
                ({"format": f, **dict.fromkeys((*o.common, *extra), 1)}, "x/*")
                for f, extra in o.formats.items()
            ]
        else:
            contexts.append((dict.fromkeys(o.common, 1), "x/*"))
        contexts += [
            (dict.fromkeys((*o.common, *extra), 1), f"{scheme}://x/y")
            for scheme, extra in o.schemes.items()
        ]
        for options, location in contexts:
            assert spec.options.problems(spec.kind, options, location) == [], (spec.kind, options)
