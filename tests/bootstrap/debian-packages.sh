#!/usr/bin/env bash
# Installs the Debian packages whose programs the tests use as reference
# peers, when they are missing. `make test` runs this first, so a fresh
# machine (CI) needs nothing by hand. Needs root (or sudo) only to install.
set -euo pipefail

# program -> Debian package
declare -A needed=(
  [nicstat]=nicstat          # tests/test_nic.py compares our NIC rates with nicstat -p
  [mountstats]=nfs-common    # tests/test_mountstats.py compares per-op figures with mountstats iostat
  [tmux]=tmux                # tests/test_top.py runs dnfsmon top in a real terminal
  [logrotate]=logrotate       # tests/test_install.py checks the recipe's logrotate file with logrotate -d
  [systemd-analyze]=systemd  # tests/test_install.py and test_ansible.py verify the units with systemd-analyze verify
  [ip]=iproute2              # tests/test_netlink.py compares the addresses read over netlink with ip -j addr
  [sudo]=sudo                # tests/test_ansible.py runs site.yml, whose plays become root or the Oracle user with sudo
)

missing=()
for program in "${!needed[@]}"; do
  command -v "$program" >/dev/null 2>&1 || missing+=("${needed[$program]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing Debian packages for the tests: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
  echo "not root and no sudo: install ${missing[*]} (apt-get install ${missing[*]}) and run again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
