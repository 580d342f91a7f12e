"""Source locations stay inside the source roots (issue 11, finding 9: `location:
../../../../etc/passwd` was read). Relative locations must resolve inside the config file's folder
or `$FLEETLEDGER_HOME` by default; with `source_roots` set, every local location and URL must be
under one of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from fleetledger.config import Config, ConfigError, load_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("FLEETLEDGER_HOME", str(home))
    return home


def _load(folder: Path, **top: object) -> Config:
    path = folder / "fleetledger.yml"
    path.write_text(yaml.safe_dump(top))
    return load_config(path)


def _source(location: str, **options: object) -> dict[str, object]:
    return {"name": "sacct", "kind": "slurm", "location": location, "options": options}


def test_a_relative_location_leaving_the_home_is_refused(home: Path) -> None:
    """The finding: this config loaded and the source read /etc/passwd."""
    with pytest.raises(ConfigError) as err:
        _load(home, sources=[_source("../../../../etc/passwd")])
    msg = str(err.value)
    assert "sources[0].location (source sacct)" in msg
    target = os.path.normpath(home / "../../../../etc/passwd")
    assert f"'../../../../etc/passwd' resolves to {target}" in msg
    assert "outside the config file's folder or $FLEETLEDGER_HOME" in msg


def test_relative_locations_inside_the_roots_load(home: Path, tmp_path: Path) -> None:
    cfg = _load(
        home,
        sources=[
            _source("sources/sacct/{date}.txt", events="sources/./sacct/../sacct/events.txt"),
            {"name": "dcgm", "kind": "dcgm", "location": "sources/dcgm/*/*.prom"},
        ],
    )
    assert cfg.resolve(cfg.sources[0].location) == str(home / "sources/sacct/{date}.txt")
    # a config outside the home may point into the home (relative to its own folder)
    other = tmp_path / "etc-fleet"
    other.mkdir()
    assert _load(other, sources=[_source("../home/sources/*.txt")]).sources[0]


def test_the_slurm_events_option_is_confined_too(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"sources\[0\]\.options\.events \(source sacct\)"):
        _load(home, sources=[_source("sacct/*.txt", events="../../events.txt")])


def test_dotdot_after_a_wildcard_is_refused(home: Path) -> None:
    """`a/**/../../x` matches `../x` when `**` matches no folder."""
    with pytest.raises(ConfigError, match="`..` after a wildcard"):
        _load(home, sources=[_source("sacct/**/../../../x.txt")])


def test_absolute_paths_and_urls_are_allowed_by_default(home: Path) -> None:
    cfg = _load(
        home,
        sources=[
            _source("/var/spool/sacct/*.txt"),
            {"name": "cur", "kind": "aws_cur", "location": "s3://billing/cur/export"},
        ],
    )
    assert [s.location for s in cfg.sources] == [
        "/var/spool/sacct/*.txt",
        "s3://billing/cur/export",
    ]


def test_explicit_source_roots_confine_absolute_paths_and_urls(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    roots = [str(data), "s3://billing/cur", "feeds"]
    ok = _load(
        home,
        source_roots=roots,
        sources=[
            _source(str(data / "sacct" / "*.txt")),
            {"name": "cur", "kind": "aws_cur", "location": "s3://billing/cur/export"},
            {"name": "dcgm", "kind": "dcgm", "location": "feeds/dcgm/*.prom"},
            {"name": "cmd", "kind": "slurm", "location": "sacct://"},
        ],
    )
    assert len(ok.sources) == 4
    for location, name in [
        ("/var/spool/sacct/*.txt", "sacct"),
        (str(tmp_path / "data-other" / "x.txt"), "sacct"),  # a sibling sharing the prefix
        ("s3://billing/curious/export", "sacct"),
        ("sources/sacct/*.txt", "sacct"),  # the home is no root once roots are set
    ]:
        with pytest.raises(ConfigError) as err:
            _load(home, source_roots=roots, sources=[_source(location)])
        assert f"sources[0].location (source {name})" in str(err.value)
        assert "outside source_roots" in str(err.value)


def test_a_relative_inventory_file_is_confined(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"inventory_file: '\.\./nodes\.csv' resolves to"):
        _load(home, inventory_file="../nodes.csv")
