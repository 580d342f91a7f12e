"""Links into the cost explorer that carry a view's state (docs/explorer.md, "URLs").

The app keeps its filters and the selected run in the URL's query parameters, so a link opens
the same view; alert messages build one with `explorer_link(alerts.app_url, ...)`. No Streamlit
import here: the alert senders use it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from urllib.parse import urlencode

#: page name -> its URL path under the app's base URL (Overview, the default page, is the root)
EXPLORER_PAGES: dict[str, str] = {
    "overview": "",
    "costs": "costs",
    "runs": "runs",
    "idle": "idle",
    "health": "health",
    "energy": "energy",
    "economics": "economics",
    "forecasts": "forecasts",
    "budgets": "budgets",
    "data_health": "data_health",
}

#: the query parameters the pages read; the filter ones may repeat (`team=a&team=b`)
URL_PARAMS: dict[str, str] = {
    "start": "first UTC day of the date range, YYYY-MM-DD (every page)",
    "end": "last UTC day of the date range, YYYY-MM-DD (every page)",
    "group": "cost explorer group-by: team | provider | service | instance_type | site | kind "
    "| user",
    "idle": "cost explorer idle cost: separate | shared",
    "team": "filter: team (repeatable; cost explorer, runs)",
    "provider": "filter: provider (repeatable; cost explorer)",
    "service": "filter: service (repeatable; cost explorer)",
    "instance_type": "filter: instance type (repeatable; cost explorer)",
    "site": "filter: site (repeatable; cost explorer, energy)",
    "kind": "filter: run kind (repeatable; cost explorer, runs)",
    "user": "filter: user (repeatable; cost explorer, runs)",
    "q": "runs: search text (run id, job name, user)",
    "sort": "runs: sort column (cost | gpu_hours | started_at | allocated_idle_cost | "
    "lost_work_cost)",
    "run": "runs: the run id whose page is open",
    "series": "forecasts: gpu_hours | spend | peak_gpus",
    "scope": "forecasts: total | team:<t> | provider:<p> | ...",
    "budget": "budgets: the budget whose periods are shown",
    "rec_kind": "economics: recommendation kind (repeatable)",
    "alert": "overview: an alert id (fct_alerts) shown at the top, as alert messages link",
}

Value = str | date | int | float | Sequence[str] | None


def explorer_link(app_url: str, page: str = "overview", **params: Value) -> str:
    """The URL of `page` with `params` as query parameters (None and empty values left out).

    >>> explorer_link("https://fl.example/", "runs", run="slurm:c:1:1", start=date(2026, 10, 2))
    'https://fl.example/runs?run=slurm%3Ac%3A1%3A1&start=2026-10-02'
    """
    if page not in EXPLORER_PAGES:
        raise ValueError(f"unknown explorer page {page!r}; one of {sorted(EXPLORER_PAGES)}")
    unknown = sorted(set(params) - set(URL_PARAMS))
    if unknown:
        raise ValueError(
            f"unknown explorer URL parameter(s) {unknown}; one of {sorted(URL_PARAMS)}"
        )
    pairs: list[tuple[str, str]] = []
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, str | date | int | float):
            text = value.isoformat() if isinstance(value, date) else str(value)
            if text:
                pairs.append((name, text))
        else:
            pairs += [(name, str(v)) for v in value if str(v)]
    base = app_url.rstrip("/") + "/" + EXPLORER_PAGES[page]
    return base + ("?" + urlencode(pairs) if pairs else "")
