"""The `economics:` config schema (docs/config.md, "Inference economics and recommendations"):
the input/output token weight of the inference unit costs and the thresholds of the
recommendation rules (docs/metrics.md, "Recommendations"). Every field is the dbt var of the
same name (`dbt_vars`); the defaults equal dbt_project.yml's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MigProfile(BaseModel):
    """A MIG profile a right-sized run may move to: `slices` of the GPU's `mig_total_slices`
    compute slices and `memory_gb` of memory."""

    model_config = ConfigDict(extra="forbid")

    profile: str = Field(pattern=r"^[0-9]+g\.[0-9]+gb$")
    slices: int = Field(ge=1)
    memory_gb: float = Field(gt=0)


DEFAULT_MIG_PROFILES = (
    MigProfile(profile="1g.10gb", slices=1, memory_gb=10),
    MigProfile(profile="2g.20gb", slices=2, memory_gb=20),
    MigProfile(profile="3g.40gb", slices=3, memory_gb=40),
    MigProfile(profile="4g.40gb", slices=4, memory_gb=40),
    MigProfile(profile="7g.80gb", slices=7, memory_gb=80),
)
DEFAULT_MIG_GPU_MODELS = (
    "A100-80GB",
    "A100 80GB",
    "H100",
    "H100-80GB",
    "H100 80GB",
    "H100-SXM5-80GB",
)
DEFAULT_DISCOUNT_RATES = {"aws": 0.28, "gcp": 0.37, "azure": 0.3, "oci": 0.25}


class EconomicsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # a generated token is priced as this many prompt tokens (cost per 1M tokens, input/output)
    inference_output_token_weight: float = Field(default=4, gt=0)
    # the TTFT p95 SLO of consolidate_replicas (and the default of the inference_slo alert)
    inference_ttft_slo_seconds: float = Field(default=1.0, gt=0)
    recommendation_hours_per_month: float = Field(default=730, gt=0)
    recommendation_high_confidence_days: int = Field(default=14, ge=1)
    recommendation_medium_confidence_days: int = Field(default=7, ge=1)
    release_idle_day_share: float = Field(default=0.8, gt=0, le=1)
    release_idle_min_gpu_hours: float = Field(default=4, ge=0)
    release_idle_min_days: int = Field(default=2, ge=1)
    right_size_max_memory_gb: float = Field(default=10, gt=0)
    right_size_max_utilization: float = Field(default=0.15, gt=0, le=1)
    right_size_memory_headroom: float = Field(default=0.2, ge=0)
    mig_gpu_models: list[str] = Field(default_factory=lambda: list(DEFAULT_MIG_GPU_MODELS))
    mig_total_slices: int = Field(default=7, ge=1)
    mig_profiles: list[MigProfile] = Field(default_factory=lambda: list(DEFAULT_MIG_PROFILES))
    # provider -> the committed-use / Savings Plan discount off on-demand, 0-1
    commitment_discount_rates: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_DISCOUNT_RATES)
    )
    commitment_min_days: int = Field(default=3, ge=1)
    release_capacity_min_share: float = Field(default=0.25, gt=0, le=1)

    @model_validator(mode="after")
    def _consistent(self) -> EconomicsSettings:
        if self.recommendation_medium_confidence_days > self.recommendation_high_confidence_days:
            raise ValueError(
                "recommendation_medium_confidence_days must not exceed "
                "recommendation_high_confidence_days"
            )
        for p in self.mig_profiles:
            if p.slices > self.mig_total_slices:
                raise ValueError(
                    f"MIG profile {p.profile} has {p.slices} slices, more than "
                    f"mig_total_slices ({self.mig_total_slices})"
                )
        bad = {k: v for k, v in self.commitment_discount_rates.items() if not 0 <= v < 1}
        if bad:
            raise ValueError(f"commitment_discount_rates must be in [0, 1): {bad}")
        return self

    def dbt_vars(self) -> dict[str, Any]:
        return self.model_dump()
