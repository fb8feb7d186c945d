"""Writing dnfsmon configs for the tests."""

from __future__ import annotations

import json


def write_config(directory, **sections):
    """`directory`/dnfsmon.toml: state and store inside `directory`, then the given
    sections as tables of plain values (JSON values are valid TOML ones)."""
    tables = {"agent": {"state_dir": "state"}, "store": {"dir": "store"}}
    for name, values in sections.items():
        tables.setdefault(name, {}).update(values)
    if "influxdb" in tables:
        tables["influxdb"].setdefault("token_env", "DNFSMON_TEST_NO_TOKEN")  # no token from the environment
    text = "".join(
        f"[{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in values.items())
        for name, values in tables.items()
    )
    path = directory / "dnfsmon.toml"
    path.write_text(text)
    return path
