"""Streamlit entry point of the fleetledger cost explorer: `streamlit run app/main.py`.

Pages live in `app/views/`; to add one, write `app/views/<name>.py` and append an `st.Page` to
`PAGES`. The sidebar (warehouse check, date range) is built here once per rerun and shared by
every page through `app.ui.context()`.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # `streamlit run app/main.py` puts only app/ on sys.path
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from app import ui  # noqa: E402
from fleetledger.explorer_links import EXPLORER_PAGES  # noqa: E402

VIEWS = Path(__file__).resolve().parent / "views"

# (page name of fleetledger.explorer_links, view file, title, icon); URL paths from EXPLORER_PAGES
_PAGES = (
    ("overview", "overview.py", "Overview", ":material/insights:"),
    ("costs", "costs.py", "Cost explorer", ":material/account_balance_wallet:"),
    ("runs", "runs.py", "Runs", ":material/play_circle:"),
    ("idle", "idle.py", "Idle and waste", ":material/hourglass_empty:"),
    ("health", "health.py", "Fleet health", ":material/monitor_heart:"),
    ("energy", "energy.py", "Energy", ":material/bolt:"),
    ("economics", "economics.py", "Inference economics", ":material/savings:"),
    ("forecasts", "forecasts.py", "Forecasts and capacity", ":material/trending_up:"),
    ("budgets", "budgets.py", "Budgets and alerts", ":material/notifications:"),
    ("data_health", "data_health.py", "Data health", ":material/health_and_safety:"),
)

PAGES = [
    st.Page(
        VIEWS / file,
        title=title,
        icon=icon,
        default=name == "overview",
        **({"url_path": EXPLORER_PAGES[name]} if EXPLORER_PAGES[name] else {}),
    )
    for name, file, title, icon in _PAGES
]

st.set_page_config(page_title="fleetledger", page_icon=":material/payments:", layout="wide")
page = st.navigation(PAGES)
ui.run_page(page, ui.sidebar())
