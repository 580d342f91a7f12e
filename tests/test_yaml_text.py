"""fleetledger/yaml_text.py: libyaml's safe loader where it reads the text, the pure-Python
one's value and error where it does not."""

from __future__ import annotations

import pytest
import yaml

from fleetledger import yaml_text
from fleetledger.config import _yaml_problem

GOOD = [
    "a: 1\nb: [x, 'y', 2.5, null, true]\nc: {d: 2026-10-01, e: '2026-10-01'}\n",
    "inventory:\n- host: gpu-1\n  resource_id: i-0abc\n  gpus: 8\n- {host: gpu-2, gpus: 4}\n",
    "s: |\n  two\n  lines\nt: >-\n  folded\n  text\nu: ~\nv: 0x1f\nw: 1_000\n",
    "",
]
BAD = ["a: [1, 2\nb: 3", "a: b: c", "\tx: 1", "a:\n  - 1\n - 2", "{a: 1", "a: 1\n---\nb: 2"]


def test_libyaml_is_used() -> None:
    assert yaml_text.SAFE_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("text", GOOD)
def test_the_same_values_as_the_pure_python_loader(text: str) -> None:
    assert yaml_text.safe_load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", BAD)
def test_the_same_error_as_the_pure_python_loader(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as ours:
        yaml_text.safe_load(text)
    with pytest.raises(yaml.YAMLError) as theirs:
        yaml.safe_load(text)
    assert type(ours.value) is type(theirs.value)
    assert _yaml_problem(ours.value) == _yaml_problem(theirs.value)


def test_a_tab_is_named_as_before() -> None:
    with pytest.raises(yaml.YAMLError) as err:
        yaml_text.safe_load("\tx: 1")
    assert _yaml_problem(err.value) == (
        "found character '\\t' that cannot start any token at line 1, column 1"
    )
