#!/usr/bin/env bash
# Installs every Debian package Compactor needs to build and test. Idempotent: a second run
# installs nothing. Boost 1.81 is used because Boost.JSON is not in Debian's default 1.74, and
# 1.81-dev conflicts with 1.74-dev, so nothing here may pull in libboost1.74-dev.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-filesystem1.81-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libicu-dev libssl-dev
  python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
