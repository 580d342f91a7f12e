"""The landed samples' grain test (`unique_landed_rows` on stg_dcgm__samples,
macros/generic_tests.sql) on a real edge the landing cannot see: a sample delivered in two
days' files. Ingest drops repeats within a day's partition; the scrape at 23:59:30 that is in
the file of day D and again in the file of day D+1 (within its day slack) lands in both
partitions, and only the warehouse test sees the two rows. The test groups only the rows at the
times of rows landed outside their partition's day: it must still fail on exactly that key
(nulls equal: the rows have no hpc_job, pod or labels), pass once the repeat is gone, and count
two pods of one name in two namespaces as two samples."""

from __future__ import annotations

import gzip
from datetime import date
from pathlib import Path

from dbt_in_process import dbt_invoke
from dcgm_write import Sample, text

from fleetledger.config import Config, Source
from ingest.registry import ingest_source

D1, D2 = date(2026, 10, 1), date(2026, 10, 2)
T1 = 1790812800000  # 2026-10-01 00:00:00 UTC, ms
LABELS = {"gpu": "0", "UUID": "GPU-0000-0", "Hostname": "n1"}


def _day(t0: int, minutes: range) -> list[Sample]:
    return [("DCGM_FI_DEV_GPU_UTIL", LABELS, str(m % 100), t0 + m * 60_000) for m in minutes]


def _build(tmp_path: Path, day2: list[Sample]) -> dict[str, tuple[str, int]]:
    src = tmp_path / "src"
    day1 = [*_day(T1, range(0, 1440, 30)), ("DCGM_FI_DEV_GPU_UTIL", LABELS, "5", T1 + 86_370_000)]
    for day, samples in ((D1, day1), (D2, day2)):
        p = src / "d" / day.isoformat() / "n1.prom.gz"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(gzip.compress(text(samples)))
    cfg = Config(
        base_dir=src, sources=[Source(name="s", kind="dcgm", location="d/{date}/*.prom.gz")]
    )
    home = tmp_path / "home"
    report = ingest_source(cfg, cfg.sources[0], [D1, D2], home)
    assert report.rows_landed == 49 + len(day2)
    result = dbt_invoke(home, "stg_dcgm__samples")
    return {
        r.node.name: (str(r.status), int(r.failures or 0))
        for r in result.result
        if r.node.resource_type == "test"
    }


def _grain(results: dict[str, tuple[str, int]]) -> tuple[str, int]:
    [name] = [n for n in results if n.startswith("unique_landed_rows_stg_dcgm__samples_")]
    return results[name]


def test_a_sample_in_two_days_files_fails_the_grain_test(tmp_path: Path) -> None:
    # day 2's file starts with day 1's last scrape (23:59:30) again: one key twice
    repeat = ("DCGM_FI_DEV_GPU_UTIL", LABELS, "5", T1 + 86_370_000)
    day2 = [repeat, *_day(T1 + 86_400_000, range(0, 1440, 30))]
    assert _grain(_build(tmp_path, day2)) == ("fail", 1)  # one key, on two rows


def test_distinct_samples_pass_the_grain_test(tmp_path: Path) -> None:
    # the same minute pattern on both days and the same value: only the time tells the rows
    # apart, and it does
    day2 = _day(T1 + 86_400_000, range(0, 1440, 30))
    assert _grain(_build(tmp_path, day2)) == ("pass", 0)


def test_two_pods_of_one_name_in_two_namespaces_are_two_samples(tmp_path: Path) -> None:
    # a time-sliced GPU shared by pod `worker-0` of namespace `a` and of namespace `b`: the
    # exporter writes one series per pod, the same GPU, time, metric and pod name. Both rows
    # land (they differ in the namespace, which ingest keys on) and the grain test passes
    # (it failed the build while its key left the namespace out)
    day2 = [
        (
            "DCGM_FI_DEV_GPU_UTIL",
            {**LABELS, "exported_namespace": ns, "exported_pod": "worker-0"},
            "40",
            T1 + 86_400_000 + m * 60_000,
        )
        for m in range(0, 1440, 30)
        for ns in ("a", "b")
    ]
    assert _grain(_build(tmp_path, day2)) == ("pass", 0)


def test_the_grain_is_the_key_ingest_drops_repeats_by() -> None:
    # the test may look for repeats across partitions only because ingest drops repeats within
    # one on this same key (ingest/core/partitions.py): the two must name the same columns
    import yaml

    from ingest.telemetry.kinds import DCGM

    staging = Path(__file__).resolve().parents[2] / "dbt_project/models/staging/dcgm"
    renamed = {
        "time": "sampled_at",
        "gpu": "gpu_index",
        "uuid": "gpu_uuid",
        "namespace": "k8s_namespace",
        "pod": "k8s_pod",
        "container": "k8s_container",
    }
    [model] = yaml.safe_load((staging / "_dcgm__models.yml").read_text())["models"]
    [grain] = [t["unique_landed_rows"] for t in model["data_tests"] if "unique_landed_rows" in t]
    assert set(grain["arguments"]["columns"]) == {
        "x_source",
        *(renamed.get(c, c) for c in DCGM.unique_key),
    }
