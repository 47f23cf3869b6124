#!/usr/bin/env bash
# Installs every Debian package Compactor needs to build and test, then the tokenizer rank files
# (npm ci of tools/tokenizer-data: gpt-tokenizer and @anthropic-ai/tokenizer at pinned versions,
# integrity-checked by the lock file, cached by npm). Idempotent: a second run installs nothing.
# Boost 1.81 is used because Boost.JSON is not in Debian's default 1.74, and 1.81-dev conflicts
# with 1.74-dev, so nothing here may pull in libboost1.74-dev.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost1.81-dev libboost-json1.81-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libicu-dev nettle-dev libcurl4-openssl-dev
  clang libclang-rt-14-dev libc++-14-dev libc++abi-14-dev
  python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm fetch the rank files and run the reference tokenizers in the differential
# tests; Debian's packages only when the machine has none (its own may be newer).
command -v node > /dev/null || missing+=(nodejs)
command -v npm > /dev/null || missing+=(npm)

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The rank files (copied into the build by CMake, with their licences). Counting never needs the
# network; only this step does, once.
data="$(cd "$(dirname "$0")" && pwd)/tokenizer-data"
if [ ! -f "$data/node_modules/.package-lock.json" ] || [ "$data/package-lock.json" -nt "$data/node_modules/.package-lock.json" ]; then
  echo "setup: fetching the tokenizer rank files (npm ci in $data)"
  npm ci --prefix "$data" --no-audit --no-fund --loglevel=error
else
  echo "setup: tokenizer rank files already in $data/node_modules"
fi

# The official SDKs the serve tests drive (tests/serve: @anthropic-ai/sdk, openai; pinned by the lock).
clients="$(cd "$(dirname "$0")/.." && pwd)/tests/serve"
if [ ! -f "$clients/node_modules/.package-lock.json" ] || [ "$clients/package-lock.json" -nt "$clients/node_modules/.package-lock.json" ]; then
  echo "setup: installing the SDKs the serve tests use (npm ci in $clients)"
  npm ci --prefix "$clients" --no-audit --no-fund --loglevel=error
else
  echo "setup: serve test SDKs already in $clients/node_modules"
fi

# The official MCP SDK whose client drives `compactor mcp` in tests (tests/mcp; pinned by the lock).
mcp_clients="$(cd "$(dirname "$0")/.." && pwd)/tests/mcp"
if [ ! -f "$mcp_clients/node_modules/.package-lock.json" ] || [ "$mcp_clients/package-lock.json" -nt "$mcp_clients/node_modules/.package-lock.json" ]; then
  echo "setup: installing the MCP SDK the mcp tests use (npm ci in $mcp_clients)"
  npm ci --prefix "$mcp_clients" --no-audit --no-fund --loglevel=error
else
  echo "setup: mcp test SDK already in $mcp_clients/node_modules"
fi
