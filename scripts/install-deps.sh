#!/usr/bin/env bash
# Installs the Debian 12 packages tagcsim needs, only those that are missing.
set -euo pipefail
packages=(build-essential cmake pkg-config libsimgrid-dev libyaml-cpp-dev libcli11-dev libfmt-dev
          libeigen3-dev doctest-dev gnuplot-nox jq)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "tagcsim: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tagcsim: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
