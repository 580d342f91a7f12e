"""Billing sources: AWS CUR (local or S3), the GCP billing export (files or BigQuery) and Cloud
Catalog prices, FOCUS files, Azure and OCI cost exports; their kind specs are in kinds.py."""
