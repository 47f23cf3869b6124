#!/usr/bin/env bash
# Installs this build into a fresh prefix, checks that the installed include folder holds only the
# SDK's headers, then configures, builds and tests examples/dedupe_results against that prefix
# from a clean folder, as a team outside the tree would: its GoogleTest tests through the test kit,
# and the installed CLI loading its plugins by `plugin:` and by `plugin_dirs`.
# usage: check_installed_example.sh BUILD_DIR EXAMPLE_SOURCE_DIR BUILD_TYPE WORK_DIR
set -euo pipefail
build=$1 example=$2 build_type=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"

expected="archive.hpp block.hpp build_fingerprint.hpp checker.hpp conversation.hpp error.hpp factory.hpp
message.hpp message_edit.hpp meter.hpp param_schema.hpp plugin.hpp protected_tail.hpp size_unit.hpp stage.hpp
stage_logger.hpp summarizer.hpp summary_compaction.hpp summary_format.hpp testkit.hpp tool_calls.hpp violation.hpp"
installed=$(cd "$work/prefix/include" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
wanted=$(for h in $expected; do echo "compactor/$h"; done | sort | tr '\n' ' ')
if [ "$installed" != "$wanted" ]; then
  echo "FAIL: the installed include folder is not the SDK" >&2
  echo "  installed: $installed" >&2
  echo "  expected:  $wanted" >&2
  exit 1
fi
echo "installed headers: the SDK's $(wc -w <<<"$expected") and nothing else"

# Each plugin's name is spelled once in its source (COMPACTOR_STAGE and its like give it to the
# plugin, the stage and the file).
for pair in dedupe_results:dedupe_results_stage.cpp no_new_secrets:no_new_secrets_checker.cpp first_lines:first_lines_summarizer.cpp; do
  name=${pair%%:*} source=$example/${pair#*:}
  count=$(grep -o "\b$name\b" "$source" | wc -l)
  if [ "$count" -ne 1 ]; then
    echo "FAIL: $source spells \"$name\" $count times, not once" >&2
    exit 1
  fi
done
echo "each of the example's plugins names itself once in its source"

if ! { cmake -S "$example" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE="$build_type" &&
       cmake --build "$work/example" -j2; } > "$work/example.log" 2>&1; then
  cat "$work/example.log"
  echo "FAIL: the example does not configure or build against the installed prefix" >&2
  exit 1
fi
ctest --test-dir "$work/example" --output-on-failure
echo "the example built against $work/prefix and its tests passed"
