"""Every project module imports, no two project modules import each other (directly or around
a loop), and project modules are imported at the top of a module, not inside functions, except
where a heavy dependency is deferred on purpose (the list below says why)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("ingest", "orchestration", "fleetledger", "app")

#: (importing module, imported module) pairs allowed inside a function, and why
DEFERRED = {
    # the CLI starts in a fraction of a second: Dagster, dbt and the generator load on demand
    ("fleetledger.cli", "fleetledger.generator"): "cli start-up",
    ("fleetledger.cli", "fleetledger.pipeline"): "cli start-up (Dagster, dbt)",
    ("fleetledger.cli", "fleetledger.queries"): "cli start-up",
    ("fleetledger.cli", "fleetledger.data_health"): "cli start-up (duckdb, polars, pyarrow)",
    ("fleetledger.cli", "fleetledger.alerts.console"): "cli start-up (duckdb, polars)",
    ("fleetledger.cli", "fleetledger.forecasting.report"): "cli start-up (duckdb)",
    ("fleetledger.cli", "fleetledger.publish"): "cli start-up (duckdb)",
    # the pipeline module is imported by the CLI; Dagster loads when a run starts
    ("fleetledger.pipeline", "orchestration.build"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.dbt"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.dbt_parse"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.config_assets"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.ingest_assets"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.partitions"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.publish"): "Dagster on demand",
    ("fleetledger.pipeline", "orchestration.schedules"): "Dagster on demand",
}


def project_modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _resolve(module: str, node: ast.ImportFrom | ast.Import, known: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".")
            pkg = pkg[: len(pkg) - node.level + (1 if known[module].name == "__init__.py" else 0)]
            base = ".".join([*pkg, base] if base else pkg)
        # `from pkg import mod` imports the submodule pkg.mod
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    return [n for n in names if n.split(".")[0] in PACKAGES and n in known]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str, known: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(modules imported at module level, modules imported inside functions)."""
    tree = ast.parse(known[module].read_text())
    top: set[str] = set()
    inner: set[str] = set()

    def visit(nodes: list[ast.stmt], in_function: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                continue  # annotations only: never executed
            if isinstance(node, ast.Import | ast.ImportFrom):
                (inner if in_function else top).update(_resolve(module, node, known))
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    nested = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    visit([child], nested)

    visit(tree.body, False)
    return top, inner


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_no_import_cycle_among_project_modules() -> None:
    known = project_modules()
    graph = {}
    for m in known:
        top, _ = imports(m, known)
        # importing a.b.c runs a/__init__ and a/b/__init__ first
        parents = {".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)}
        graph[m] = {t for t in top if t != m and t not in parents}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_project_modules_are_imported_at_the_top() -> None:
    known = project_modules()
    found = {
        (m, i)
        for m in known
        for i in imports(m, known)[1]
        if i.split(".")[0] != m.split(".")[0] or i != m
    }
    assert found - set(DEFERRED) == set()


def test_every_module_imports() -> None:
    """In a fresh interpreter (as `python -c "import ..."`), every module but the Streamlit
    pages (scripts that `st.navigation` runs) and the code location that loads a home."""
    names = [
        m
        for m in project_modules()
        if not m.startswith("app.views") and m not in {"app.main", "orchestration.definitions"}
    ]
    code = f"import importlib\nfor m in {names!r}:\n    importlib.import_module(m)\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert importlib.import_module("ingest.registry").kind_names()
