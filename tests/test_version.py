"""The version is written once (agent/dnfsmon/__init__.py); everything else reads it."""

from __future__ import annotations

import importlib.metadata
import os

import dnfsmon
from runner import run_dnfsmon
from test_repository import ROOT, tracked_files

SOURCE_OF_TRUTH = "agent/dnfsmon/__init__.py"

# The Ansible role still pins the version to install in its own files; those
# pins go once the role installs whatever wheel the wheelhouse holds.
ANSIBLE_PINS = {
    "ansible/site.yml",
    "ansible/roles/dnfsmon_agent/defaults/main.yml",
    "ansible/roles/dnfsmon_agent/meta/argument_specs.yml",
    "ansible/roles/dnfsmon_agent/README.md",
}


def test_the_cli_and_the_installed_metadata_report_the_one_version():
    result = run_dnfsmon("--version", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"dnfsmon {dnfsmon.__version__}"
    # pyproject.toml declares the version dynamic: the wheel's metadata comes from __init__.py.
    assert importlib.metadata.version("dnfsmon") == dnfsmon.__version__


def test_no_other_file_writes_the_version():
    quoted = {
        f'"{dnfsmon.__version__}"',
        f"'{dnfsmon.__version__}'",
        f"-{dnfsmon.__version__}-",
        f"`{dnfsmon.__version__}`",
    }
    copies = []
    for name in tracked_files():
        if name == SOURCE_OF_TRUTH or name in ANSIBLE_PINS or not os.path.isfile(os.path.join(ROOT, name)):
            continue
        try:
            text = open(os.path.join(ROOT, name), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        copies += [f"{name}: {q}" for q in quoted if q in text]
    assert copies == [], "read dnfsmon.__version__ instead of repeating it:\n" + "\n".join(copies)
