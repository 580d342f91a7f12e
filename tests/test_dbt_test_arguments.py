"""Every generic data test of the dbt project nests its arguments under `arguments:`, as dbt
1.10 and later expect: a test with its arguments at the top level still runs, but every parse
warns about it (`MissingArgumentsPropertyInGenericTestDeprecation`, 53 warnings in each build's
log until 2026-12-06). A static read of the yml files, no dbt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"
#: what a generic test's entry may hold besides `arguments`
NOT_ARGUMENTS = {"arguments", "config", "name", "description", "column_name"}


def _tests(node: dict[str, Any], where: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(where, test name, body) of every generic test with a body under `node`: its own, its
    columns' and, for a source, its tables' and their columns'."""
    for test in node.get("data_tests") or node.get("tests") or []:
        if isinstance(test, dict):
            for name, body in test.items():
                if isinstance(body, dict):
                    yield where, name, body
    for column in node.get("columns") or []:
        yield from _tests(column, f"{where}.{column['name']}")
    for table in node.get("tables") or []:
        yield from _tests(table, f"{where}.{table['name']}")


def test_generic_tests_nest_their_arguments() -> None:
    checked, top_level = 0, []
    for yml in sorted(PROJECT.rglob("*.yml")):
        if "target" in yml.parts or yml.name in ("dbt_project.yml", "profiles.yml"):
            continue
        doc = yaml.safe_load(yml.read_text()) or {}
        for kind in ("models", "sources", "seeds", "snapshots"):
            for node in doc.get(kind) or []:
                for where, name, body in _tests(node, node["name"]):
                    checked += 1
                    extra = sorted(set(body) - NOT_ARGUMENTS)
                    if extra:
                        top_level.append(f"{yml.relative_to(PROJECT)}: {where} {name} {extra}")
    assert checked >= 100
    assert top_level == []
