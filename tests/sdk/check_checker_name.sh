#!/bin/bash
# A checker cannot override Checker::name(): compiled against the SDK headers, the checker that
# says `override` is refused by the compiler, naming name(), and the same checker without it
# compiles (so the refusal is that one line's, not a broken include path).
# usage: check_checker_name.sh CXX SDK_INCLUDE_DIR SOURCE
set -u
cxx=$1 include=$2 source=$3
control=$("$cxx" -std=c++20 -fsyntax-only -I"$include" "$source" 2>&1) || { echo "FAIL: the control does not compile:"; echo "$control"; exit 1; }
refused=$("$cxx" -std=c++20 -fsyntax-only -DOVERRIDE -I"$include" "$source" 2>&1)
if [ $? -eq 0 ]; then echo "FAIL: a checker overriding name() compiled"; exit 1; fi
if ! grep -q "name() const.*marked .override., but does not override" <<<"$refused"; then
  echo "FAIL: refused for another reason than name():"; echo "$refused"; exit 1
fi
echo "ok: overriding Checker::name() does not compile"
