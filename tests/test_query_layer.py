"""Every query over the marts goes through the one query layer (fleetledger/queries.py): the
CLI, the app's pages and the notebooks hold no SQL of their own."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
SQL = re.compile(r"\bselect\b.+\bfrom\b|\bfrom\s+main\.", re.IGNORECASE | re.DOTALL)


def test_no_sql_outside_the_query_layer() -> None:
    files = [REPO / "fleetledger" / "cli.py", REPO / "app" / "ui.py", REPO / "app" / "main.py"]
    files += sorted((REPO / "app" / "views").glob("*.py"))
    offenders = [str(f.relative_to(REPO)) for f in files if SQL.search(f.read_text())]
    for nb_path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        if SQL.search(code):
            offenders.append(str(nb_path.relative_to(REPO)))
    assert offenders == []
