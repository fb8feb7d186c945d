"""What one `dnfsmon collect` costs a database host, against peers in the same run.

Run on demand (not part of `make test`): `make bench`. Reports, for each
command, median CPU seconds (user + system, from wait4's rusage) and peak RSS
over N runs, and dnfsmon's ratio to each peer measured in this run on this
machine. Targets are ratios, never absolute times.

Peers:
- `nicstat -p` (C; one reading of /proc/net/dev and /sys): the floor for a
  native NIC sampler.
- `python3 -c "import psutil; psutil.net_io_counters(pernic=True)"`: a bare
  Python process with the usual library for the same counters.

Also measured, to show what lazy imports save:
- `dnfsmon collect` without the filer_tcp source (no pyroute2 import);
- `python3 -c "import influxdb_client"`: what every run would pay if it
  imported influxdb-client (the agent ships with http.client now).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile


def measure(argv, runs):
    cpu, rss = [], []
    for _ in range(runs):
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            try:
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) not in (0, 3):
            raise SystemExit(f"{argv} failed with status {status}")
        cpu.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024)
    return statistics.median(cpu), max(rss)


def commands(directory):
    """The commands compared, with their configs written under directory."""
    config = os.path.join(directory, "bench.toml")
    with open(config, "w") as f:
        f.write(f"[agent]\nstate_dir = '{directory}/state'\n[store]\ndir = '{directory}/store'\n")
    lean = os.path.join(directory, "lean.toml")
    with open(lean, "w") as f:
        f.write(
            f"[agent]\nstate_dir = '{directory}/lean-state'\n[store]\ndir = '{directory}/lean-store'\n"
            "[host]\nsources = ['nic', 'tcp', 'mountstats', 'rpc']\n"
        )
    return {
        "dnfsmon collect": [sys.executable, "-m", "dnfsmon", "--config", config, "collect"],
        "collect, no filer_tcp": [sys.executable, "-m", "dnfsmon", "--config", lean, "collect"],
        "import influxdb_client": [sys.executable, "-c", "import influxdb_client"],
        "import pyroute2": [sys.executable, "-c", "import pyroute2.iproute.linux, pyroute2.netlink.diag"],
        "nicstat": ["nicstat", "-p"],
        "python+psutil": [sys.executable, "-c", "import psutil; psutil.net_io_counters(pernic=True)"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        results = {name: measure(argv, args.runs) for name, argv in commands(directory).items()}
    ours_cpu, ours_rss = results["dnfsmon collect"]
    print(f"{'command':<24} {'CPU s (median)':>15} {'peak RSS MiB':>13} {'dnfsmon/this CPU':>17} {'RSS':>6}")
    for name, (cpu, rss) in results.items():
        print(
            f"{name:<24} {cpu:>15.4f} {rss:>13.1f} {ours_cpu / cpu if cpu else float('inf'):>17.2f} {ours_rss / rss:>6.2f}"
        )


if __name__ == "__main__":
    main()
