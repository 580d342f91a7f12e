"""Schemas of the telemetry landing tables (docs/landing.md): `dcgm_samples` (one row per DCGM
sample), `inference_samples` (one row per vLLM metric sample), `power_readings` (facility and IT
meters) and `node_gpu_power_hourly` (node GPU power rollups). `ingest/core/landing.py` merges
`TABLES` into its registry and adds the lineage columns. Only pyarrow is imported here."""

from __future__ import annotations

import pyarrow as pa

from ingest.core.columns import F64, I64, STR, TS

TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "dcgm_samples": [
        ("time", TS),
        ("host", STR),
        ("gpu", pa.int32()),
        ("uuid", STR),
        ("mig_instance", STR),
        ("mig_profile", STR),
        ("metric", STR),
        ("value", F64),
        ("model_name", STR),
        ("hpc_job", STR),
        ("namespace", STR),
        ("pod", STR),
        ("container", STR),
        (
            "labels",
            STR,
        ),  # the series' other labels, JSON object string (ingest/telemetry/dcgm_labels.py)
    ],
    # vLLM serving metrics (kind inference_metrics, ingest/telemetry/vllm.py): one row per
    # sample of a counter, histogram series (`_bucket` with its `le`, `_sum`, `_count`) or gauge
    "inference_samples": [
        ("time", TS),
        ("host", STR),
        ("namespace", STR),
        ("pod", STR),
        ("container", STR),
        ("model_name", STR),
        ("metric", STR),
        ("le", STR),  # a bucket's upper bound as Prometheus writes it ("0.25", "+Inf")
        ("finished_reason", STR),
        ("value", F64),
        ("labels", STR),  # the series' other labels, JSON object string
    ],
    "power_readings": [
        ("time", TS),
        ("site", STR),
        ("meter", STR),
        ("kind", STR),
        ("kw", F64),
    ],
    "node_gpu_power_hourly": [
        ("time", TS),
        ("host", STR),
        ("interval_seconds", I64),
        ("power_avg_w", F64),
        ("power_min_w", F64),
        ("power_max_w", F64),
        ("temp_avg_c", F64),
        ("temp_min_c", F64),
        ("temp_max_c", F64),
        ("util_avg", F64),
        ("util_min", F64),
        ("util_max", F64),
        ("gmem_avg", F64),
        ("gmem_min", F64),
        ("gmem_max", F64),
    ],
}
