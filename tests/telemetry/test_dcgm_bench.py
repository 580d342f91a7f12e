"""The DCGM parsing benchmark (benchmarks/dcgm_parse.py, the `dcgm_parse` stage of
`fleetledger bench --stages dcgm_parse`) prints both parsers' rates (a smoke test on a tiny
input: the numbers themselves are measured by hand, see docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from benchmarks.dcgm_parse import main


def test_bench_prints_both_parsers(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--samples", "2000", "--scrape-interval", "3600", "--client-samples", "1"]
    assert main([*argv, "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    # two AWS node-days: 24 scrapes x 8 GPUs x 7 metrics each
    assert "scrape files: 2 files" in out and "2,688 samples" in out
    assert "fleetledger parse_text:" in out and "M samples/s" in out
    assert "on the first 1 files (1,344 samples)" in out
    assert "prometheus_client" in out and "speed-up over prometheus_client:" in out
