"""The README's install recipe, run verbatim as root, then the agent as its new service user, as cron runs it.

The README's wheelhouse block runs first, on a copy of the checkout (it needs
a package index: PyPI). The install block then runs with no index at all, as
on a database host: in a network namespace of its own (`unshare -n`, only a
loopback that is down) and with PIP_INDEX_URL naming a closed port, so any
download pip would try fails. It runs under /bin/sh, as pasted, without the
test adding `set -e`: the block's own stop at the first failure is tested.

The recipe takes its paths as variables (PREFIX, ETC, VAR, LOG, CRON_D,
LOGROTATE_D): here they point under a temporary directory, so the machine's
/opt, /etc and /var are untouched; the service user is real (useradd) and is
removed by the README's uninstall block at the end. Every environment error
a user can meet is then driven through the installed command as that user,
not as root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import pytest

import systemd_units
from dnfsmon.store import Store

pytestmark = pytest.mark.system

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The environment cron gives a job (the brief's `env -i PATH=/usr/bin:/bin`).
CRON_ENV = ["env", "-i", "PATH=/usr/bin:/bin"]
# ISO 8601 with the zone, then the one format every message has (cli.setup_logging).
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d dnfsmon\[\d+\] (DEBUG|INFO|WARNING|ERROR): ")


def recipe_block(name: str = "install") -> str:
    """The shell block between the NAME-recipe markers of README.md, as a user would copy it."""
    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    section = text.split(f"<!-- {name}-recipe: begin", 1)[1].split(f"<!-- {name}-recipe: end -->", 1)[0]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


# A port nothing listens on: pip's index, were it asked (and the namespace has no network anyway).
NO_INDEX = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def without_network(argv: list[str]) -> list[str]:
    """argv in a new network namespace: no route anywhere, as on a database host with no package index."""
    return ["unshare", "--net", *argv]


def build_wheelhouse(base: str) -> str:
    """The README's wheelhouse block, verbatim, in a copy of the checkout; the wheelhouse's path."""
    source = os.path.join(base, "src")
    shutil.copytree(
        REPO,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "demo-data", "build", "wheelhouse", "*.egg-info"),
    )
    # The machine's python3 with pip (Debian's python3-pip), as on a build machine.
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    result = subprocess.run(
        ["sh", "-c", recipe_block("wheelhouse")], cwd=source, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return os.path.join(source, "wheelhouse")


def run_install_recipe(installation: Installation, wheelhouse: str) -> subprocess.CompletedProcess:
    """The README's install block under /bin/sh, from a directory holding wheelhouse/, with no index."""
    host = os.path.join(installation.base, "host")
    os.makedirs(host, exist_ok=True)
    if not os.path.exists(os.path.join(host, "wheelhouse")):
        shutil.copytree(wheelhouse, os.path.join(host, "wheelhouse"))
    for parent in ("opt", "etc/cron.d", "etc/logrotate.d", "var/lib", "var/log"):
        os.makedirs(os.path.join(installation.base, parent), exist_ok=True)
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "DNFSMON_USER": installation.user,
        **NO_INDEX,
        **installation.paths,
    }
    return subprocess.run(
        without_network(["sh", "-c", recipe_block()]), cwd=host, env=env, capture_output=True, text=True, timeout=900
    )


class Installation:
    def __init__(self, base: str, user: str):
        self.base = base
        self.user = user
        self.paths = {
            "PREFIX": f"{base}/opt/dnfsmon",
            "ETC": f"{base}/etc/dnfsmon",
            "VAR": f"{base}/var/lib/dnfsmon",
            "LOG": f"{base}/var/log/dnfsmon",
            "CRON_D": f"{base}/etc/cron.d",
            "LOGROTATE_D": f"{base}/etc/logrotate.d",
        }
        self.dnfsmon = f"{self.paths['PREFIX']}/bin/dnfsmon"
        self.config = f"{self.paths['ETC']}/dnfsmon.toml"

    def as_user(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """argv as the service user, with cron's environment."""
        command = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", *CRON_ENV, *argv]
        if "stdout" not in kwargs:
            kwargs["capture_output"] = True
        return subprocess.run(command, text=True, timeout=300, **kwargs)

    def run_cron_line(self) -> subprocess.CompletedProcess:
        """The command of the cron.d line the recipe wrote, through /bin/sh as cron runs it."""
        lines = [line for line in open(f"{self.paths['CRON_D']}/dnfsmon") if line.strip() and not line.startswith("#")]
        assert len(lines) == 1
        fields = lines[0].split(None, 6)  # minute hour day month weekday user command
        assert fields[:5] == ["*"] * 5 and fields[5] == self.user
        return self.as_user(["/bin/sh", "-c", fields[6]])


@pytest.fixture(scope="module")
def wheelhouse():
    if os.geteuid() != 0:
        raise RuntimeError("tests/test_install.py runs the install recipe as root (useradd): run the tests as root")
    base = tempfile.mkdtemp(prefix="dnfsmon-wheelhouse-")
    try:
        yield build_wheelhouse(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def new_installation(prefix: str, number: int) -> Installation:
    """Paths under a new temporary directory, and a service user's name no other run of this module uses."""
    base = tempfile.mkdtemp(prefix=prefix)
    os.chmod(base, 0o755)  # the service user must reach its directories below
    return Installation(base, f"dnfsmont{os.getpid() % 100000}{number}")


@pytest.fixture(scope="module")
def installed(wheelhouse):
    installation = new_installation("dnfsmon-install-", 0)
    try:
        result = run_install_recipe(installation, wheelhouse)
        assert result.returncode == 0, result.stdout + result.stderr
        installation.recipe_output = result.stdout + result.stderr
        yield installation
    finally:
        subprocess.run(["userdel", installation.user], capture_output=True)
        shutil.rmtree(installation.base, ignore_errors=True)


def test_recipe_ends_with_a_clean_check_and_owned_directories(installed):
    assert "[FAIL]" not in installed.recipe_output and "all good" in installed.recipe_output
    import grp
    import pwd

    config = os.stat(installed.config)
    assert config.st_mode & 0o777 == 0o640 and config.st_uid == 0
    assert grp.getgrgid(config.st_gid).gr_name == installed.user
    for key in ("VAR", "LOG"):
        info = os.stat(installed.paths[key])
        assert pwd.getpwuid(info.st_uid).pw_name == installed.user and info.st_mode & 0o777 == 0o750
    # The config names the recipe's directories, not the built-in /var/lib/dnfsmon.
    text = open(installed.config, encoding="utf-8").read()
    assert f'state_dir = "{installed.paths["VAR"]}/state"' in text


def test_cron_line_twice_logs_one_timestamped_line_per_run_and_the_second_run_stores_rates(installed):
    for _ in range(2):
        result = installed.run_cron_line()
        assert result.returncode == 0, result.stderr
    log = open(f"{installed.paths['LOG']}/collect.log", encoding="utf-8").read().splitlines()
    assert len(log) == 2, log  # quiet on success: one summary line per run
    for line in log:
        assert LOG_LINE.match(line) and "INFO: 6 samples: " in line, line
    agents = [
        p
        for p in Store(f"{installed.paths['VAR']}/store", 10**9, read_only=True).points()
        if p.measurement == "dnfsmon_agent"
    ]
    assert len(agents) == 12
    # The second run's first sample diffs against the first run's last: rates across runs.
    assert agents[6].fields["intervals"] > 0


def test_logrotate_accepts_the_recipes_file(installed):
    result = subprocess.run(
        ["logrotate", "-d", f"{installed.paths['LOGROTATE_D']}/dnfsmon"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "error" not in result.stderr.lower(), result.stderr


def test_contrib_units_use_only_el8_directives_and_verify(installed, tmp_path):
    for name in ("dnfsmon.service", "dnfsmon.timer"):
        text = open(os.path.join(REPO, "contrib", name), encoding="utf-8").read()
        assert systemd_units.problems_on_el8(name, text) == []
        # Rendered for this installation's paths and user, as a user with other paths would edit them.
        for default, actual in (
            ("/opt/dnfsmon", installed.paths["PREFIX"]),
            ("/etc/dnfsmon", installed.paths["ETC"]),
            ("/var/lib/dnfsmon", installed.paths["VAR"]),
            ("=dnfsmon\n", f"={installed.user}\n"),
        ):
            text = text.replace(default, actual)
        (tmp_path / name).write_text(text)
    result = systemd_units.verify([str(tmp_path / "dnfsmon.timer"), str(tmp_path / "dnfsmon.service")])
    assert result.returncode == 0 and "dnfsmon" not in result.stderr, result.stderr


# --- Environment errors: one line naming the path or setting and the fix, the documented exit code.


def write_case_config(directory: str, extra: str = "") -> str:
    path = os.path.join(directory, "dnfsmon.toml")
    with open(path, "w") as f:
        f.write(f'[agent]\nstate_dir = "{directory}/state"\n[store]\ndir = "{directory}/store"\n{extra}')
    os.chmod(path, 0o644)
    return path


def user_dir(installed, name: str) -> str:
    """A directory of the service user's, for one case."""
    directory = os.path.join(installed.base, "cases", name)
    os.makedirs(directory)
    os.chmod(os.path.dirname(directory), 0o755)
    for sub in ("", "state", "store"):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
        shutil.chown(os.path.join(directory, sub), installed.user, installed.user)
    return directory


def mount_tmpfs(directory: str, installed, size: str = "64k") -> None:
    """A small file system over the case's directory, holding its config and directories again."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", directory], check=True)
    write_case_config(directory)
    for sub in ("state", "store"):
        os.makedirs(os.path.join(directory, sub))
        shutil.chown(os.path.join(directory, sub), installed.user, installed.user)


def case_root_owned_lock(installed, d):
    open(os.path.join(d, "state", "collect.lock"), "w").close()  # left by a run as root, mode 0644 root:root
    os.chmod(os.path.join(d, "state", "collect.lock"), 0o600)
    return ["collect"], 2, [f"{d}/state/collect.lock", "[agent] state_dir", "Permission denied", "chown"]


def case_state_dir_not_writable(installed, d):
    shutil.chown(os.path.join(d, "state"), "root", "root")
    return ["collect"], 2, [f"{d}/state", "owned by root", f"As root: chown -R {installed.user} {d}/state"]


def case_lock_is_a_directory(installed, d):
    os.mkdir(os.path.join(d, "state", "collect.lock"))
    return ["collect"], 2, [f"{d}/state/collect.lock", "Is a directory", "remove it"]


def case_lock_is_a_fifo(installed, d):
    lock = os.path.join(d, "state", "collect.lock")
    os.mkfifo(lock)
    shutil.chown(lock, installed.user, installed.user)
    return ["collect"], 2, [lock, "not a regular file"]


def case_disk_full(installed, d):
    mount_tmpfs(d, installed)
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:  # the rest of the 64 KiB: a full disk
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:  # ENOSPC: full
            pass
    return ["collect"], 2, [d, "No space left on device"]


def case_read_only_store(installed, d):
    mount_tmpfs(d, installed)
    subprocess.run(["mount", "-o", "remount,ro", d], check=True)
    return ["collect"], 2, [d, "Read-only file system", "read-write"]


def case_config_not_readable(installed, d):
    os.chmod(os.path.join(d, "dnfsmon.toml"), 0o600)  # root's
    return ["collect"], 2, [f"{d}/dnfsmon.toml", "Permission denied"]


def case_ship_without_influxdb(installed, d):
    return ["ship"], 2, ["[influxdb] enabled = true is needed", f"{d}/dnfsmon.toml"]


def case_token_file_world_readable(installed, d):
    token = os.path.join(d, "token")
    with open(token, "w") as f:
        f.write("secret-token-value\n")
    os.chmod(token, 0o644)
    shutil.chown(token, installed.user, installed.user)
    write_case_config(d, f'[influxdb]\nenabled = true\nurl = "http://127.0.0.1:9"\ntoken_file = "{token}"\n')
    return ["ship"], 2, [token, "chmod 600"]


ENVIRONMENT_CASES = {
    "root_owned_lock": case_root_owned_lock,
    "state_dir_not_writable": case_state_dir_not_writable,
    "lock_is_a_directory": case_lock_is_a_directory,
    "lock_is_a_fifo": case_lock_is_a_fifo,
    "disk_full": case_disk_full,
    "read_only_store": case_read_only_store,
    "config_not_readable": case_config_not_readable,
    "ship_without_influxdb": case_ship_without_influxdb,
    "token_file_world_readable": case_token_file_world_readable,
}


@pytest.mark.parametrize("name", sorted(ENVIRONMENT_CASES))
def test_environment_error_is_one_line_with_the_path_and_the_fix(installed, name):
    directory = user_dir(installed, name)
    write_case_config(directory)
    try:
        args, code, expected = ENVIRONMENT_CASES[name](installed, directory)
        result = installed.as_user([installed.dnfsmon, *args, "--config", f"{directory}/dnfsmon.toml"])
    finally:
        subprocess.run(["umount", directory], capture_output=True)  # the tmpfs cases
    lines = result.stderr.splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1 and LOG_LINE.match(lines[0]) and " ERROR: " in lines[0], result.stderr
    for text in expected:
        assert text in lines[0]
    assert "secret-token-value" not in result.stderr


def test_default_paths_as_a_non_root_user_are_one_line_each(installed):
    """No config at all (the built-in /var/lib/dnfsmon, which this user may not create).

    (`show` only reads: on a store that does not exist it says so and exits 0.)
    """
    assert not os.path.exists("/etc/dnfsmon/dnfsmon.toml")
    for command in ("collect",):
        result = installed.as_user([installed.dnfsmon, command])
        lines = result.stderr.splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert "/var/lib/dnfsmon" in lines[0] and "Permission denied" in lines[0]


def test_a_reader_that_stops_reading_is_not_an_error(installed):
    """`dnfsmon metrics | head`: the pipe's reader has gone before dnfsmon writes."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = installed.as_user([installed.dnfsmon, "metrics"], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_check_as_the_service_user_names_a_directory_it_cannot_write(installed):
    directory = user_dir(installed, "check_root_owned_state")
    write_case_config(directory)
    shutil.chown(os.path.join(directory, "state"), "root", "root")
    result = installed.as_user([installed.dnfsmon, "check", "--config", f"{directory}/dnfsmon.toml"])
    assert result.returncode == 2, result.stdout
    [line] = [line for line in result.stdout.splitlines() if "state_dir" in line]
    assert line.startswith("[FAIL]") and f"chown -R {installed.user} {directory}/state" in line


def test_the_wheel_carries_the_licence_example_config_catalogue_and_units(wheelhouse):
    import zipfile

    [wheel] = [n for n in os.listdir(wheelhouse) if n.startswith("dnfsmon-")]
    with zipfile.ZipFile(os.path.join(wheelhouse, wheel)) as archive:
        names = set(archive.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = archive.read(metadata).decode()
    for name in ("example.toml", "catalogue.csv", "contrib/dnfsmon.service", "contrib/dnfsmon.timer"):
        assert f"dnfsmon/{name}" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in headers
    # The whole SQL pack, every file git tracks in it (`dnfsmon sql` names where it lands).
    pack = subprocess.run(
        ["git", "ls-files", "agent/dnfsmon/sql"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "agent/dnfsmon/sql/dnfs_iops.sql" in pack and "agent/dnfsmon/sql/setup/create_monitor_user.sql" in pack
    assert {"dnfsmon/" + os.path.relpath(path, "agent/dnfsmon") for path in pack} <= names


def test_dnfsmon_sql_names_the_installed_pack_and_the_readme_command_runs_there(installed):
    """`dnfsmon sql` as the service user prints a directory holding the pack; each README's first pack
    line, run as a user who is not root, reaches a directory holding the pack that it may write to.

    The scripts save the DBA's settings with STORE SET to a file in the current directory, so the
    first README line once pointed SQL*Plus at the root-owned installed directory, where that write
    fails: the line now copies the pack first, and running it again must refresh, not nest, the copy."""
    result = installed.as_user([installed.dnfsmon, "sql"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    directory = result.stdout.strip()
    assert directory.startswith(installed.paths["PREFIX"] + "/"), directory
    for script in ("dnfs_iops.sql", "dnfs_check.sql", "README.md", "setup/create_monitor_user.sql"):
        assert os.path.isfile(os.path.join(directory, script)), script
    home = tempfile.mkdtemp(prefix="dnfsmon-dba-home-")
    try:
        shutil.chown(home, installed.user, installed.user)
        for readme in ("README.md", "sql/README.md"):
            text = open(os.path.join(REPO, readme), encoding="utf-8").read()
            line = next(line for line in text.splitlines() if "sqlplus user@db @dnfs_iops" in line)
            # sqlplus replaced by what it needs of the directory: the script, and a file it may write
            # (STORE SET ... REPLACE), whose directory it prints.
            shell = line.replace("dnfsmon sql", f"{installed.dnfsmon} sql").replace(
                "sqlplus user@db @dnfs_iops",
                "head -1 dnfs_iops.sql && echo 'set define \"&\"' > dnfs_saved_settings.sql && pwd",
            )
            for attempt in (1, 2):
                result = installed.as_user(["env", f"HOME={home}", "sh", "-c", shell])
                assert result.returncode == 0, (readme, attempt, result.stderr)
                assert result.stdout == f"-- File name:   dnfs_iops.sql\n{home}/dnfsmon-sql\n", (readme, result.stdout)
            assert not os.path.exists(os.path.join(home, "dnfsmon-sql", os.path.basename(directory)))
            assert os.path.isfile(os.path.join(home, "dnfsmon-sql", "setup", "create_monitor_user.sql"))
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --- The wheelhouse, a failed install, and the uninstall.


def readme_python_versions() -> list[str]:
    return re.search(r"for version in ([\d. ]+); do", recipe_block("wheelhouse")).group(1).split()


def runtime_dependencies() -> list[str]:
    """The names of the runtime dependencies in pyproject.toml."""
    try:
        import tomllib
    except ImportError:  # Python 3.9/3.10
        import tomli as tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    return [re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in dependencies]


def test_the_wheelhouse_has_every_dependency_for_every_python_of_the_readme(wheelhouse):
    """Binary wheels only (a database host has no compiler): each Python's own build where there is one."""
    names = os.listdir(wheelhouse)
    assert all(name.endswith(".whl") for name in names), names
    for version in readme_python_versions():
        tag = "cp" + version.replace(".", "")
        for package in ("oracledb", "cffi"):  # built per Python version
            assert any(n.startswith(f"{package}-") and f"-{tag}-" in n for n in names), (package, version, names)
    # Every runtime dependency pyproject.toml names, and python-oracledb's own (abi3 or pure: one wheel serves all).
    for package in [*runtime_dependencies(), "cryptography", "pycparser"]:
        assert any(n.lower().startswith(f"{package}-") for n in names), (package, names)


def test_the_readme_the_playbook_and_the_example_inventory_name_the_same_pythons():
    import yaml

    with open(os.path.join(REPO, "ansible", "site.yml"), encoding="utf-8") as f:
        [build] = [play for play in yaml.safe_load(f) if play.get("hosts") == "localhost"]
    with open(os.path.join(REPO, "ansible", "inventory", "example", "group_vars", "all", "main.yml")) as f:
        example = yaml.safe_load(f)["dnfsmon_wheelhouse_python_versions"]
    assert build["vars"]["dnfsmon_wheelhouse_default_python_versions"] == example == readme_python_versions()


def test_every_dependency_with_a_python_version_marker_is_downloaded_by_name():
    """pip download evaluates markers for the Python running it (pip issue 11010): such a dependency is named."""
    try:
        import tomllib
    except ImportError:  # Python 3.9/3.10
        import tomli as tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    marked = [d.split(";")[0].strip() for d in dependencies if "python_version" in d]
    assert marked
    site = open(os.path.join(REPO, "ansible", "site.yml"), encoding="utf-8").read()
    for requirement in marked:
        assert f"'{requirement}'" in recipe_block("wheelhouse") and f'"{requirement}"' in site, requirement


def test_the_recipe_stops_at_a_missing_wheel_before_writing_cron_or_logrotate(wheelhouse, tmp_path):
    """A wheelhouse without python-oracledb: pip fails (no index to fall back on), and nothing is scheduled."""
    partial = tmp_path / "wheelhouse"
    partial.mkdir()
    for name in os.listdir(wheelhouse):
        if not name.startswith("oracledb-"):
            shutil.copy(os.path.join(wheelhouse, name), partial)
    installation = new_installation("dnfsmon-failed-install-", 1)
    try:
        result = run_install_recipe(installation, str(partial))
        assert result.returncode != 0, result.stdout + result.stderr
        assert "oracledb" in result.stderr, result.stderr
        assert not os.path.exists(f"{installation.paths['CRON_D']}/dnfsmon")
        assert not os.path.exists(f"{installation.paths['LOGROTATE_D']}/dnfsmon")
        assert not os.path.exists(installation.paths["ETC"])
    finally:
        subprocess.run(["userdel", installation.user], capture_output=True)
        shutil.rmtree(installation.base, ignore_errors=True)


def test_zz_the_readmes_uninstall_removes_everything_the_recipe_installed(installed):
    """Last in this module (it removes the installation the tests above use): the README's block, verbatim."""
    import pwd

    written = [
        f"{installed.paths['CRON_D']}/dnfsmon",
        f"{installed.paths['LOGROTATE_D']}/dnfsmon",
        *(installed.paths[key] for key in ("PREFIX", "ETC", "VAR", "LOG")),
    ]
    assert all(os.path.exists(path) for path in written)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DNFSMON_USER": installed.user, **installed.paths}
    result = subprocess.run(
        ["sh", "-c", recipe_block("uninstall")], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [path for path in written if os.path.exists(path)] == []
    with pytest.raises(KeyError):
        pwd.getpwnam(installed.user)
