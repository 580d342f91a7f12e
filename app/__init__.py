"""fleetledger's Streamlit cost explorer.

Run it with `streamlit run app/main.py` (or `fleetledger app`). It reads the published, read-only
snapshot `$FLEETLEDGER_HOME/warehouse.duckdb`; every number comes from a mart through
`app.queries`, where all the SQL lives.
"""
