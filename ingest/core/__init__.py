"""What every domain shares: the landing zone (landing.py, partitions.py), read results and
errors (common.py, errors.py), the kind spec (spec.py), the ingest report (report.py) and the
Great Expectations suite engine (quality.py, quality_landed.py). Imports nothing from the
domains but their table schemas."""
