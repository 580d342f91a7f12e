"""Pages of the cost explorer: each module is a Streamlit page script listed in `app/main.py`."""
