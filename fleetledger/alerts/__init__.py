"""Budgets, alert rules and their delivery (DESIGN.md, "Forecasts, budgets and alerts";
docs/alerts.md): budget status (budgets.py), the rules (rules.py), the state store
(store.py), channels (delivery.py, messages.py) and the evaluation that ties them (engine.py)."""
