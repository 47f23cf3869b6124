#!/usr/bin/env bash
# configs/deploy/compactor-serve.service passes `systemd-analyze verify` with nothing to say (an
# unknown key or a misspelled system-call group is a warning there, so any output fails), with
# ExecStart pointed at the built binary (verify checks that it can run), and it keeps what the
# docs promise: a service user, reload by SIGHUP, a state folder of its own, and hardening.
# usage: systemd_unit_test.sh COMPACTOR UNIT
set -euo pipefail
cli="$1" unit="$2"
command -v systemd-analyze > /dev/null || { echo "FAIL: systemd-analyze is missing (bash tools/setup.sh --tests installs systemd)"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s#/usr/local/bin/compactor#$cli#" "$unit" > "$work/compactor-serve.service"
out="$(cd "$work" && systemd-analyze verify ./compactor-serve.service 2>&1)" || { echo "FAIL: systemd-analyze verify: $out"; exit 1; }
[ -z "$out" ] || { echo "FAIL: systemd-analyze verify printed: $out"; exit 1; }
for line in 'User=compactor' 'ExecReload=/bin/kill -HUP $MAINPID' 'StateDirectory=compactor' 'StateDirectoryMode=0700' \
            'NoNewPrivileges=yes' 'ProtectSystem=strict' 'CapabilityBoundingSet=' 'SystemCallFilter=@system-service'; do
  grep -qxF "$line" "$unit" || { echo "FAIL: the unit lacks $line"; exit 1; }
done
echo "ok: $unit verifies cleanly"
