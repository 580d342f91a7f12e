"""YAML text read the safe way, with libyaml's parser where PyYAML was built with it.

`yaml.safe_load` parses in pure Python: fleetledger.yml, read by many steps of every run,
took 20 ms for the test fleets' 5 KB and 75 ms for the scale benchmark's 22 KB (its inventory
of 128 nodes) each time; libyaml's `CSafeLoader` reads the same documents into the same values
(the same safe constructors) in about a seventh of that. A document libyaml rejects is read
again by the pure-Python loader, so a mistake is reported exactly as before (its wording names
what was found, `'\\t'` or `':'`, where libyaml's does not) and a document only the pure-Python
loader accepts still loads."""

from __future__ import annotations

from typing import Any

import yaml

#: libyaml's safe loader when PyYAML has it (its wheels do), else the pure-Python one
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`: the same value, or the same error, sooner."""
    try:
        return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return yaml.safe_load(text)
