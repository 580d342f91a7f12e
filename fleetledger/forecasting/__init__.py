"""Resource forecasts and capacity (docs/forecasts.md): `fct_forecast` and `fct_capacity`.

Plain functions, no Dagster: `series` reads the daily series from the marts (DuckDB SQL),
`models` chooses a statsforecast model per series by rolling-origin back-test and forecasts it,
`forecast` assembles fct_forecast's rows, `capacity` the runway, `build` writes both tables to
the build warehouse, `report` prints the headline of `fleetledger forecast`.
"""
