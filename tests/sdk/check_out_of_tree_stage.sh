#!/usr/bin/env bash
# Configures and builds tests/sdk/sample_stage against a Compactor build tree (the SDK), then
# asks that build's `compactor plugins` whether the stage loads; then builds the same source under
# another name (tests/sdk/misnamed_stage), which must not compile.
# usage: check_out_of_tree_stage.sh SAMPLE_SOURCE_DIR COMPACTOR_BUILD_DIR COMPACTOR_BIN BUILD_TYPE WORK_DIR
set -euo pipefail
source_dir=$1 compactor_dir=$2 compactor=$3 build_type=$4 work=$5
rm -rf "$work"
if ! { cmake -S "$source_dir" -B "$work" -DCompactor_DIR="$compactor_dir" -DCMAKE_BUILD_TYPE="$build_type" &&
       cmake --build "$work"; } > "$work.log" 2>&1; then
  cat "$work.log"
  echo "FAIL: the out-of-tree stage does not configure or build against the SDK" >&2
  exit 1
fi
compiler=$("$compactor" --version | sed -n 's/^compiler //p')
expected="stage	sample	$work/plugins/compactor_stage_sample.so	plugin sample 1.0.0	API 11	$compiler	ok"
listing=$("$compactor" plugins --plugin-dir "$work/plugins" || true)
if ! grep -qxF "$expected" <<<"$listing"; then
  echo "$listing"
  echo "FAIL: expected the line: $expected" >&2
  exit 1
fi
echo "the out-of-tree stage built against the SDK and loads"

# The stage's name is spelled once, in its source: built as compactor_add_stage(misnamed …), the
# source's COMPACTOR_STAGE("sample", …) refuses to compile, saying why.
misnamed="$(dirname "$source_dir")/misnamed_stage"
rm -rf "$work-misnamed"
if ! cmake -S "$misnamed" -B "$work-misnamed" -DCompactor_DIR="$compactor_dir" -DCMAKE_BUILD_TYPE="$build_type" > "$work-misnamed.log" 2>&1; then
  cat "$work-misnamed.log"
  echo "FAIL: the misnamed project does not configure" >&2
  exit 1
fi
if cmake --build "$work-misnamed" >> "$work-misnamed.log" 2>&1; then
  echo "FAIL: a stage whose source names it \"sample\" built as compactor_stage_misnamed.so" >&2
  exit 1
fi
if ! grep -q "COMPACTOR_stage's name differs from the one compactor_add_stage gave this file" "$work-misnamed.log"; then
  cat "$work-misnamed.log"
  echo "FAIL: the refusal does not say why" >&2
  exit 1
fi
rm -rf "$work-misnamed"
echo "a stage built under another name than its source spells does not compile"

# A flag set whose plugins the host would refuse is refused when the project configures, in one
# line naming both fingerprints (_GLIBCXX_DEBUG changes every container's layout).
rm -rf "$work-debug"
if cmake -S "$source_dir" -B "$work-debug" -DCompactor_DIR="$compactor_dir" -DCMAKE_BUILD_TYPE="$build_type" \
     -DCMAKE_CXX_FLAGS=-D_GLIBCXX_DEBUG > "$work-debug.log" 2>&1; then
  echo "FAIL: configuring with -D_GLIBCXX_DEBUG succeeded; the host would refuse its plugins" >&2
  exit 1
fi
if ! grep -q "Compactor: plugins built with .* would have the fingerprint libstdcxx[0-9]*-abi1-debug1-.*, but the host is .*-debug0-.*, so it would refuse them" "$work-debug.log"; then
  cat "$work-debug.log"
  echo "FAIL: the configure-time refusal does not name both fingerprints" >&2
  exit 1
fi
rm -rf "$work-debug"
echo "a -D_GLIBCXX_DEBUG project is refused when it configures"
