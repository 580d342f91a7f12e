"""The analyst notebook runs top to bottom against a real pipeline output and agrees with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "cost_per_run.ipynb"
MONEY_TOL = 0.01  # reporting currency


def _ground_truth(home: Path) -> dict[str, Any]:
    return json.loads((home / "ground_truth.json").read_text())


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_committed_notebook_has_no_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in _code_cells(nb):
        assert cell.get("outputs") == [], "clear the notebook's outputs before committing"
        assert cell.get("execution_count") is None


@pytest.fixture(scope="module")
def executed(pipeline_home: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLEETLEDGER_HOME", str(pipeline_home))  # the kernel inherits it
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=300,
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        )
        client.execute()  # raises CellExecutionError, naming the cell, on the first error
    return nb


def test_notebook_runs_without_errors(executed: nbformat.NotebookNode) -> None:
    errors = [
        out
        for cell in _code_cells(executed)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    check_output = "".join(
        out.get("text", "")
        for cell in _code_cells(executed)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )
    assert "all sums match the mart" in check_output


def _summary(nb: nbformat.NotebookNode) -> dict[str, Any]:
    cells = [c for c in _code_cells(nb) if "summary" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, "the notebook needs exactly one cell tagged `summary`"
    text = "".join(o.get("text", "") for o in cells[0].outputs if o.output_type == "stream")
    return json.loads(text)


def test_notebook_numbers_match_ground_truth(
    executed: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    summary = _summary(executed)
    runs = _ground_truth(pipeline_home)["runs"]
    max_cost = max(float(r["cost"]) for r in runs)
    # ties (equal cost within a cent) may be ordered either way
    top_ids = {r["run_id"] for r in runs if float(r["cost"]) >= max_cost - MONEY_TOL}
    assert summary["top_run_id"] in top_ids
    assert summary["top_run_cost"] == pytest.approx(max_cost, abs=MONEY_TOL)
    assert summary["total_run_cost"] == pytest.approx(
        sum(float(r["cost"]) for r in runs), abs=MONEY_TOL
    )
