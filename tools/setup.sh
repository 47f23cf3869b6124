#!/usr/bin/env bash
# Installs the Debian packages Compactor needs to build (librsvg2-dev: the headers of the library
# `compactor bench` loads to draw its charts as PNG), then the tokenizer rank files (npm ci of
# tools/tokenizer-data: gpt-tokenizer and @anthropic-ai/tokenizer at pinned versions,
# integrity-checked by the lock file, cached by npm). With --tests, also what the tests and
# benchmarks need: GoogleTest, Google Benchmark, clang and libc++ (the loader's foreign-ABI
# fixtures, the fuzz targets), clang-tidy (tools/check-source.sh), redis-server (the store's tests
# start their own), chromium (headless, the gateway page's test: tests/serve) with a font for its
# screenshot, and the npm clients the serve tests drive (tests/serve). Without
# it, a first build of the product installs no test tooling. Idempotent: a second run installs
# nothing. Boost 1.81 is used because Boost.JSON is not in Debian's default 1.74, and 1.81-dev
# conflicts with 1.74-dev, so nothing here may pull in libboost1.74-dev.
set -euo pipefail

with_tests=0
case "${1:-}" in
  "") ;;
  --tests) with_tests=1 ;;
  *) echo "usage: bash tools/setup.sh [--tests]" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake pkg-config
  libboost1.81-dev libboost-json1.81-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  libicu-dev nettle-dev libcurl4-openssl-dev
  libhiredis-dev
  librsvg2-dev
)
if [ "$with_tests" -eq 1 ]; then
  packages+=(
    libgtest-dev libgmock-dev googletest libbenchmark-dev
    clang libclang-rt-14-dev libc++-14-dev libc++abi-14-dev
    clang-tidy python3 python3-yaml openssl nginx-light systemd
    redis-server chromium fonts-dejavu-core
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm fetch the rank files (and, for the tests, run the reference tokenizers and the
# SDK clients); Debian's packages only when the machine has none (its own may be newer).
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

# npm ci in a folder unless its node_modules already matches its lock file.
npm_ci() {
  local dir="$1" what="$2"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "setup: installing $what (npm ci in $dir)"
    # npm ci refuses a lock that names optional platform packages the registry never published
    # (Qwen Code's clipboard helpers); npm install then installs from the same lock, unchanged.
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=silent ||
      { echo "setup: npm ci refused the lock in $dir; installing from it with npm install --no-save";
        npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error; }
  else
    echo "setup: $what already in $dir/node_modules"
  fi
}

root="$(cd "$(dirname "$0")/.." && pwd)"
# The rank files (copied into the build by CMake, with their licences). Counting never needs the
# network; only this step does, once.
npm_ci "$root/tools/tokenizer-data" "the tokenizer rank files"
if [ "$with_tests" -eq 1 ]; then
  # The real clients the tests drive (the official SDKs, the agent CLIs, the MCP SDK): one folder
  # each under tests/clients, pinned by its lock file.
  for clients in "$root"/tests/clients/*/; do
    [ -f "$clients/package-lock.json" ] && npm_ci "${clients%/}" "the test client in ${clients#$root/}"
  done
  # The agent CLIs (Gemini CLI declares engines node >=20) need Node 20 or newer; Debian 12's own
  # nodejs is 18, installed above only when the machine had no Node at all.
  node_major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$node_major" -lt 20 ]; then
    echo "setup: Node.js $(node --version) is older than 20, which the agent CLI tests need (tests/clients);" \
         "install Node.js 20 or newer (e.g. from nodesource) before tools/test.sh" >&2
  fi
fi
