#!/usr/bin/env bash
# Checks a systemd unit of assetd's against its config: no State/Cache/Logs/Runtime/
# ConfigurationDirectory= of the unit is, or holds, a managed root (files.roots). systemd chowns
# such a folder recursively to User= (every client's file in a root, ACLs stripped), and
# `systemctl clean` deletes it. scripts/test.sh runs it in its installation check.
set -eu
unit=${1:?usage: check-unit.sh UNIT CONFIG}
config=${2:?usage: check-unit.sh UNIT CONFIG}
fail() { echo "check-unit.sh: $unit: $*" >&2; exit 1; }

roots=$(sed -nE 's/^roots = \[(.*)\]/\1/p' "$config" | grep -oE '"[^"]*"' | tr -d '"')
[ -n "$roots" ] || fail "no roots = [...] in $config"
while IFS='=' read -r key value; do
    case "$key" in
        StateDirectory) base=/var/lib ;;
        CacheDirectory) base=/var/cache ;;
        LogsDirectory) base=/var/log ;;
        RuntimeDirectory) base=/run ;;
        ConfigurationDirectory) base=/etc ;;
        *) continue ;;
    esac
    for name in $value; do
        folder=$base/${name%%:*}
        while IFS= read -r root; do
            case "${root%/}/" in
                "${folder%/}/"*) fail "$key=$name is $folder, which is or holds the managed root $root" ;;
            esac
        done <<<"$roots"
    done
done < <(grep -E '^[A-Za-z]+Directory=' "$unit")
