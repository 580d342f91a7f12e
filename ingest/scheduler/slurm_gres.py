"""The GPUs a Slurm allocation holds, from its TRES / GRES strings, MIG instances apart.

Slurm configured for MIG (`AutoDetect=nvml`, or `gres.conf` with `Name=gpu Type=1g.10gb`) names
each MIG instance as a typed GPU whose type is the MIG profile, and the untyped entry counts
every GPU device the job holds, MIG instances included: `gres/gpu:1g.10gb=1,gres/gpu=1` is one
1g.10gb instance, not one whole GPU. A MIG profile is `<slices>g.<memory>gb` (`+me`: with media
extensions), e.g. `1g.10gb`, `3g.40gb`, `1g.10gb+me`, `7g.80gb` (NVIDIA MIG User Guide, "Supported
MIG Profiles"); it holds `<slices>` of its GPU's 7 compute slices on A100, H100, H200, H20, B200
and GB200 (docs/metrics.md has the table). Any other type (`a100`, `h100`, `P100`) is a whole GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.scheduler.slurm_fields import _GRES_GPU, _split_top

#: a MIG profile as Slurm names its GRES type: `1g.10gb`, `3g.40gb`, `1g.10gb+me`
MIG_PROFILE = re.compile(r"^(\d+)g\.\d+gb(?:\+me)?$", re.IGNORECASE)


@dataclass(frozen=True)
class GpuRequest:
    """What an allocation holds: `whole` GPUs, and `mig_instances` MIG instances of
    `mig_slices` compute slices in all. `mig_profile` is the profile when every instance has
    the same one (None: no MIG, or several profiles)."""

    whole: int
    mig_instances: int = 0
    mig_slices: int = 0
    mig_profile: str | None = None


def _mig_slices(gpu_type: str | None) -> int | None:
    m = MIG_PROFILE.match(gpu_type or "")
    return int(m.group(1)) if m else None


def _request(untyped: int | None, typed: list[tuple[str, int]]) -> GpuRequest | None:
    if untyped is None and not typed:
        return None
    mig = [(t, n, s) for t, n in typed if (s := _mig_slices(t)) is not None]
    instances = sum(n for _, n, _ in mig)
    slices = sum(n * s for _, n, s in mig)
    profiles = {t.lower() for t, n, _ in mig if n > 0}
    plain = sum(n for t, n in typed if _mig_slices(t) is None)
    # the untyped entry counts every GPU device, MIG instances included (count it once)
    whole = max(untyped - instances, 0) if untyped is not None else plain
    profile = profiles.pop() if len(profiles) == 1 else None
    return GpuRequest(whole, instances, slices, profile)


def gpu_request_from_tres(tres: str) -> GpuRequest | None:
    """The GPUs of a TRES string (`gres/gpu=N`, `gres/gpu:<type>=N`); None when it names none.
    `gres/gpu:1g.10gb=1,gres/gpu=1` -> 0 whole GPUs and one 1g.10gb instance (1 slice)."""
    untyped: int | None = None
    typed: list[tuple[str, int]] = []
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        try:
            n = int(value)
        except ValueError:
            continue
        if key == "gres/gpu":
            untyped = n
        else:
            typed.append((key.removeprefix("gres/gpu:"), n))
    return _request(untyped, typed)


def gpu_request_from_gres(gres: str) -> GpuRequest | None:
    """The GPUs of an old-style GRES string (`gpu:P100:2(IDX:1,3)`, `gpu:1g.10gb:1`); None
    when it names none."""
    untyped: int | None = None
    typed: list[tuple[str, int]] = []
    for item in _split_top(gres, ","):
        m = _GRES_GPU.match(item.strip())
        if not m:
            continue
        if m.group(1) is None:
            untyped = (untyped or 0) + int(m.group(2))
        else:
            typed.append((m.group(1), int(m.group(2))))
    if untyped is not None and typed:
        # old-style strings list each type once; an untyped entry beside them is extra devices
        untyped += sum(n for _, n in typed)
    return _request(untyped, typed)
