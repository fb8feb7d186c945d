#!/usr/bin/env bash
# Installs the Debian packages the NFS lab (tests/lab/, marker `lab`) needs,
# when they are missing: a userspace NFS server (nfs-ganesha with its VFS
# backend, rpcbind for NFSv3), a C compiler for the lab's delay forwarder, tcpdump for the
# captures on both ends and tshark as the reference decoder. `make test` runs
# this. The lab's NFS client (nfs-rs) comes from PyPI with the test tools.
# None of these is needed by the agent itself.
set -euo pipefail

# program -> Debian package
declare -A needed=(
  [ganesha.nfsd]=nfs-ganesha      # the NFS server (v3 and v4.1), run in a network namespace
  [rpcbind]=rpcbind               # NFSv3 MOUNT and NFS registration inside the server namespace
  [tcpdump]=tcpdump               # captures on the client and the server side
  [tshark]=tshark                 # the reference: tshark -z rpc,srt
  [ethtool]=ethtool               # offloads off on the lab's veths
  [cc]=gcc                        # builds the lab's delay forwarder (tests/lab/delayfwd.c)
  [nft]=nftables                  # random loss in the lab's middle namespace (numgen), and dropping one reply
)
# Packages without a program to look for.
extra=(nfs-ganesha-vfs libc6-dev)

missing=()
for program in "${!needed[@]}"; do
  command -v "$program" >/dev/null 2>&1 || missing+=("${needed[$program]}")
done
for package in "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing Debian packages for the NFS lab: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
  echo "not root and no sudo: install ${missing[*]} (apt-get install ${missing[*]}); the lab tests skip until then" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# tshark's package asks whether non-root users may capture: no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
