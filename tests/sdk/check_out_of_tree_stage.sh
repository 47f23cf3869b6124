#!/usr/bin/env bash
# Configures and builds tests/sdk/sample_stage against a Compactor build tree (the SDK), then
# asks that build's `compactor plugins` whether the stage loads.
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
expected="sample	$work/plugins/compactor_stage_sample.so	plugin sample 1.0.0	API 4	$compiler	ok"
listing=$("$compactor" plugins --plugin-dir "$work/plugins" || true)
if ! grep -qxF "$expected" <<<"$listing"; then
  echo "$listing"
  echo "FAIL: expected the line: $expected" >&2
  exit 1
fi
echo "the out-of-tree stage built against the SDK and loads"
