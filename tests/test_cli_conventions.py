"""Command-line conventions: where options go, what --help says, init-config, the generated metrics doc."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess

import pytest

from configs import write_config
from dnfsmon import config as configuration
from runner import DNFSMON

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = ["collect", "ship", "capture", "diff", "show", "metrics", "check", "init-config", "sql"]


def run(*args):
    return subprocess.run([*DNFSMON, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # runs collect
@pytest.mark.parametrize("where", ["before", "after"])
def test_config_is_accepted_before_or_after_the_command(tmp_path, where):
    config = write_config(tmp_path, agent={"host": "testhost"}, host={"sources": ["tcp"]})
    args = ["--config", config, "collect"] if where == "before" else ["collect", "--config", config]
    result = run(*args)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "state").is_dir()  # the file's state_dir, not the built-in one


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_shows_the_config_in_use_and_no_default_none(command, tmp_path):
    config = tmp_path / "mine.toml"
    result = run(command, "--help", "-c", config)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert f"(inuse:{config})" in "".join(text.split())  # argparse may wrap a long path at its hyphens
    assert "default: None" not in text and "default: False" not in text
    plain = " ".join(run(command, "--help").stdout.split())
    if not os.path.exists(configuration.DEFAULT_PATH):
        assert "(in use: built-in defaults" in plain


def test_a_bad_number_says_what_is_wanted():
    result = run("collect", "--interval", "abc")
    assert result.returncode == 2
    assert "argument --interval: must be a positive number of seconds, at most 3600, got 'abc'" in result.stderr
    assert "_positive_float" not in result.stderr


@pytest.mark.slow  # runs collect three times
def test_verbose_and_quiet(tmp_path):
    config = write_config(tmp_path, agent={"host": "testhost"}, host={"sources": ["tcp"]})
    quiet = run("collect", "-c", config, "--quiet", "--count", 2, "--interval", 0.1)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = run("collect", "-c", config, "--verbose", "--count", 2, "--interval", 0.1)
    assert "DEBUG: sample 1/2" in loud.stderr and "DEBUG: sample 2/2" in loud.stderr
    normal = run("collect", "-c", config, "--count", 2, "--interval", 0.1)
    assert len(normal.stderr.splitlines()) == 1 and "INFO: 2 samples: " in normal.stderr


def test_init_config_writes_the_example_0640_and_never_overwrites(tmp_path):
    path = tmp_path / "etc" / "dnfsmon.toml"
    missing_dir = run("init-config", path)
    assert missing_dir.returncode == 2 and "install -d" in missing_dir.stderr
    path.parent.mkdir()
    result = run("init-config", path, "--var-dir", tmp_path / "var")
    assert result.returncode == 0, result.stderr
    assert os.stat(path).st_mode & 0o777 == 0o640
    cfg = configuration.load(str(path))
    assert cfg.state_dir == str(tmp_path / "var" / "state") and cfg.store_dir == str(tmp_path / "var" / "store")
    example = open(configuration.EXAMPLE_PATH, encoding="utf-8").read().splitlines()
    written = path.read_text().splitlines()
    assert len(written) == len(example) and sum(a != b for a, b in zip(example, written)) == 2
    path.write_text("# mine\n")
    again = run("init-config", path)
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert path.read_text() == "# mine\n"


def test_init_config_does_not_follow_a_planted_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep\n")
    link = tmp_path / "dnfsmon.toml"
    link.symlink_to(target)
    result = run("init-config", link)
    assert result.returncode == 2 and target.read_text() == "keep\n"


def test_docs_metrics_md_is_current():
    generated = run("metrics", "--markdown")
    assert generated.returncode == 0
    with open(os.path.join(REPO, "docs", "metrics.md"), encoding="utf-8") as f:
        assert f.read() == generated.stdout, "regenerate: dnfsmon metrics --markdown > docs/metrics.md"


# --- dnfsmon sql: the SQL pack installed with the agent (tests/test_install.py checks the built wheel).


def test_dnfsmon_sql_prints_the_directory_holding_the_pack():
    result = run("sql")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    directory = result.stdout.strip()
    assert os.path.samefile(directory, os.path.join(REPO, "sql"))
    for script in ("dnfs_iops.sql", "README.md", "setup/create_monitor_user.sql"):
        assert os.path.isfile(os.path.join(directory, script)), script


def test_sql_help_lists_every_script_of_the_packs_readme():
    """The scripts sql/README.md's table names, each with its purpose, and no helper."""
    help_text = run("sql", "--help").stdout
    readme = open(os.path.join(REPO, "sql", "README.md"), encoding="utf-8").read()
    scripts = re.findall(r"^\| `([\w/]+\.sql)` \|", readme, flags=re.MULTILINE)
    assert "dnfs_iops.sql" in scripts and "setup/create_monitor_user.sql" in scripts
    listed = re.findall(r"^  (\S+\.sql) +\S", help_text, flags=re.MULTILINE)
    assert listed == sorted(scripts), help_text
    assert "Direct NFS reads and writes per second" in help_text


def test_the_package_data_carries_every_file_of_the_pack():
    """pyproject.toml's package-data globs match every file git tracks under agent/dnfsmon/sql."""
    try:
        import tomllib
    except ImportError:  # Python 3.9/3.10
        import tomli as tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        globs = tomllib.load(f)["tool"]["setuptools"]["package-data"]["dnfsmon"]
    tracked = subprocess.run(
        ["git", "ls-files", "agent/dnfsmon/sql"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(tracked) > 10
    # setuptools matches each glob against the path below the package; "*" does not cross a "/".
    for path in tracked:
        relative = os.path.relpath(path, "agent/dnfsmon")
        assert any(
            fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/") for pattern in globs
        ), relative
    assert os.readlink(os.path.join(REPO, "sql")) == "agent/dnfsmon/sql"
