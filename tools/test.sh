#!/usr/bin/env bash
# Sets up (the product's packages and the test tooling: setup.sh --tests), builds and runs every
# test: the default preset (which turns the tests, benchmarks and test kit on in build/, after a
# product-only build there too), then the whole suite again under AddressSanitizer +
# UndefinedBehaviorSanitizer (every report fatal), then the canary that proves a sanitizer report
# really fails a run. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh --tests

echo "== build (default preset)"
cmake --preset default >/dev/null
cmake --build --preset default
echo "== tests (default preset)"
ctest --preset default -j2

echo "== build (asan preset)"
cmake --preset asan >/dev/null
cmake --build --preset asan
echo "== tests (asan preset)"
ctest --preset asan -j2

echo "== sanitizer canary (must fail)"
if ctest --test-dir build-asan -L canary --output-on-failure >build-asan/canary.log 2>&1; then
  cat build-asan/canary.log
  echo "FAIL: the sanitizer canary passed, so a sanitizer report would not fail the run" >&2
  exit 1
fi
grep -q "ERROR: AddressSanitizer: heap-buffer-overflow" build-asan/canary.log || {
  cat build-asan/canary.log
  echo "FAIL: the canary failed without an AddressSanitizer report" >&2
  exit 1
}
echo "canary failed with an AddressSanitizer report, as it must"
