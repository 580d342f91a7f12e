"""The bad-input corpus (issue 11): every case of cases_*.py through the runner, then a summary
per source kind that fails when a case is not handled.

Adding a case: write its input builder and `Expect` in the module of its domain (billing,
telemetry, scheduler, config; docs/testing.md); a case waiting for a fix carries
`pending="finding N"` until that fix is merged (FLEETLEDGER_CORPUS_PENDING=1 runs them
anyway). Each case runs in its own folder in
milliseconds (one reader and its landing); the cases that need marts are in
test_corpus_pipeline.py.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import cases_billing
import cases_config
import cases_scheduler
import cases_telemetry
import pytest
from inputs import SamplesMissing
from runner import Case, Result, run_case

from ingest.registry import kind_names

CASES: list[Case] = [
    *cases_billing.CASES,
    *cases_telemetry.CASES,
    *cases_scheduler.CASES,
    *cases_config.CASES,
]
_RESULTS: dict[str, Result] = {}
#: FLEETLEDGER_CORPUS_PENDING=1 runs the pending cases too (to see which a merged fix handles)
RUN_PENDING = os.environ.get("FLEETLEDGER_CORPUS_PENDING") == "1"


def _run(case: Case, folder: Path) -> Result:
    if case.id not in _RESULTS:
        try:
            _RESULTS[case.id] = run_case(case, folder)
        except SamplesMissing as err:
            pytest.skip(str(err))
    return _RESULTS[case.id]


def test_case_ids_are_unique() -> None:
    ids = Counter(c.id for c in CASES)
    assert [i for i, n in ids.items() if n > 1] == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    if case.pending and not RUN_PENDING:
        pytest.skip(f"pending {case.pending}")
    result = _run(case, tmp_path)
    assert result.handled, f"{case.id}: {result.detail}"


def summary_table(results: list[Result], pending: list[Case]) -> str:
    kinds = sorted({r.case.kind for r in results} | {c.kind for c in pending})
    lines = [f"{'kind':<14}{'tried':>6}{'handled':>9}{'pending':>9}  not handled"]
    for kind in kinds:
        tried = [r for r in results if r.case.kind == kind]
        fails = [r.case.name for r in tried if not r.handled]
        waiting = [c for c in pending if c.kind == kind]
        lines.append(
            f"{kind:<14}{len(tried):>6}{len(tried) - len(fails):>9}{len(waiting):>9}  "
            + (", ".join(fails) or "-")
        )
    for c in pending:
        lines.append(f"pending: {c.id} ({c.pending})")
    return "\n".join(lines)


def test_corpus_summary(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Per source kind: cases tried, handled and pending; fails listing every case not handled.
    Every kind and the config have cases; the corpus holds at least 45."""
    assert len(CASES) >= 45
    covered = {c.kind for c in CASES}
    assert set(kind_names()) | {"config"} <= covered, set(kind_names()) - covered
    pending = [c for c in CASES if c.pending]
    results = [_run(c, tmp_path_factory.mktemp(c.name)) for c in CASES if not c.pending]
    print("\n" + summary_table(results, pending))
    failed = [f"{r.case.id}: {r.detail}" for r in results if not r.handled]
    assert failed == [], "\n".join(failed)
