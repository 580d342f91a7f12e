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

VIEWS = Path(__file__).resolve().parent / "views"

PAGES = [
    st.Page(VIEWS / "overview.py", title="Overview", icon=":material/insights:", default=True),
]

st.set_page_config(page_title="fleetledger", page_icon=":material/payments:", layout="wide")
page = st.navigation(PAGES)
ui.run_page(page, ui.sidebar())
