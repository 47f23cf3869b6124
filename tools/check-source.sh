#!/usr/bin/env bash
# Source hygiene, checked in CI: no function in framework/, plugins/ or tools/ longer than 100
# lines (clang-tidy's readability-function-size over the build's compile_commands.json), and no
# comment citing an issue number in their sources (the history lives in the git log, the design in docs/design/).
# Usage: tools/check-source.sh [BUILD_DIR]  (default build/, configured by the default preset)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"

echo "== no issue numbers in framework/, plugins/, tools/"
if grep -rn "issue [0-9]" framework plugins tools --exclude-dir=node_modules; then
  echo "FAIL: a source cites an issue number; say why in the code's own terms" >&2
  exit 1
fi

echo "== no function over 100 lines (clang-tidy readability-function-size)"
[ -f "$build/compile_commands.json" ] || {
  echo "FAIL: $build/compile_commands.json not found; configure with cmake --preset default" >&2
  exit 2
}
mapfile -t sources < <(git ls-files 'framework/*.cpp' 'plugins/*.cpp' 'tools/*.cpp' | grep -v node_modules)
log="$build/function-size.log"
run-clang-tidy -quiet -p "$build" -j "$(nproc)" \
  -checks='-*,readability-function-size' \
  -config='{CheckOptions: [{key: readability-function-size.LineThreshold, value: 100}]}' \
  -header-filter="$(pwd)/(framework|plugins|tools)/" \
  "${sources[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log" || true
if grep -E "warning: function .* exceeds recommended size" "$log" | sort -u | grep .; then
  echo "FAIL: functions above are over 100 lines; split them at their natural seams" >&2
  exit 1
fi
if grep -q "error:" "$log"; then
  grep -m 20 "error:" "$log"
  echo "FAIL: clang-tidy could not read every source ($log)" >&2
  exit 1
fi
echo "every function in framework/, plugins/ and tools/ is within 100 lines (${#sources[@]} files)"
