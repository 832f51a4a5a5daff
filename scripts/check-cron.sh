#!/usr/bin/env bash
# Checks a cron file of assetd's (etc/cron.d/assetd by default): every job parses, and no job
# of root's writes into a folder another user may own (/var/lib/assetd is the daemon's user's
# under User=; a symlink planted there would make root truncate any file). scripts/test.sh
# runs it in its installation check.
set -eu
cron=${1:-etc/cron.d/assetd}
fail() { echo "check-cron.sh: $cron: $*" >&2; exit 1; }

jobs=0
commands=()
while IFS= read -r line; do
    case "$line" in '' | '#'* | [A-Z]*=*) continue ;; esac
    # minute hour day month weekday <tab> user <tab> command
    IFS=$'\t' read -r _ user command <<<"$line"
    [ -n "$command" ] || fail "not five times, a user and a command, tab-separated: $line"
    # cron turns an unescaped % into a newline.
    if grep -q '\(^\|[^\\]\)%' <<<"$command"; then fail "an unescaped % (write \\%): $command"; fi
    command=${command//\\%/%}
    sh -n -c "$command" || fail "does not parse: $command"
    if [ "$user" = root ]; then
        # A job of root's writes nothing but /dev/null itself: what writes runs through
        # `$owner`, setpriv to the folder's owner. All of the job is judged, not only what
        # comes before its first setpriv: a write after it runs as root all the same. Taken
        # out: the assignment of `owner`, `$owner sh -c '...'`, and `$owner CMD ARGS` up to the
        # next operator or redirection (root's shell opens a redirection before setpriv runs).
        if grep -q '\$owner' <<<"$command" && ! grep -q 'owner="setpriv ' <<<"$command"; then
            fail "a job of root's runs \$owner without setting it to setpriv: $command"
        fi
        as_root=$(sed -E -e 's/owner="setpriv [^"]*"//g' -e "s/\\\$owner +sh -c '[^']*'//g" \
            -e 's/\$owner [^;&|<>]*//g' <<<"$command")
        as_root=${as_root//>\/dev\/null/}
        as_root=${as_root//>&2/}
        if grep -qE '>|(^|[^a-z])(mv|rm|cp|tee|ln|truncate)( |$)' <<<"$as_root"; then
            fail "a job of root's writes into a folder as root (use setpriv to its owner): $command"
        fi
        commands+=("$command")
    fi
    jobs=$((jobs + 1))
done <"$cron"
[ "$jobs" -gt 0 ] || fail "no jobs"

# Run for real (as root, with setpriv): the jobs of root's, with stand-ins for assetctl (the
# daemon writes a backup itself) and logger, against a state folder owned by nobody. Once as
# it is: each job works. Once with symlinks nobody planted at every name they write: a job
# may fail, but nothing outside the folder changes.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "check-cron.sh: not root with setpriv: the jobs were not run" >&2
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
mkdir "$tmp/bin" "$tmp/victim.d"
echo precious >"$tmp/victim"
cat >"$tmp/bin/assetctl" <<'FAKE'
#!/bin/sh
[ "$1" = backup ] && { echo copy >"$2"; chown --reference="${2%/*}" "$2"; }
echo '{"objects": 1}'
FAKE
printf '#!/bin/sh\ncat >/dev/null\n' >"$tmp/bin/logger"
chmod 0755 "$tmp/bin/assetctl" "$tmp/bin/logger"
# run_jobs clean|planted [command prefix, such as setpriv to another user]
run_jobs() {
    local command mode=$1
    shift
    for command in "${commands[@]}"; do
        command=${command//\/var\/lib\/assetd/$tmp/state}
        command=${command//\/var\/lib\/node_exporter/$tmp/state}
        (cd / && PATH=$tmp/bin:/usr/bin:/bin "$@" sh -c "$command") 2>"$tmp/stderr" || [ "$mode" = planted ] ||
            { cat "$tmp/stderr" >&2; fail "failed${*:+ (as $*)}: $command"; }
    done
}
# fresh_state UID:GID MODE: an empty state folder.
fresh_state() {
    rm -rf "$tmp/state"
    mkdir "$tmp/state"
    chown "$1" "$tmp/state"
    chmod "$2" "$tmp/state"
}
# written UID: each job wrote its file, owned by UID.
written() {
    for name in stats.json assetd.prom backup.sqlite; do
        [ -f "$tmp/state/$name" ] || fail "no $name written${2:+ ($2)}"
        [ "$(stat -c %u "$tmp/state/$name")" = "$1" ] || fail "$name is not the folder owner's${2:+ ($2)}"
    done
}
# plant: symlinks at every name the jobs write, to the victim file and folder, the folder's.
plant() {
    for name in stats.json.new assetd.prom.new backup.sqlite.new; do ln -s "$tmp/victim" "$tmp/state/$name"; done
    for name in stats.json assetd.prom backup.sqlite; do ln -s "$tmp/victim.d" "$tmp/state/$name"; done
    chown -h "$1" "$tmp/state"/*
}
untouched() {
    [ "$(cat "$tmp/victim")" = precious ] && [ -z "$(ls -A "$tmp/victim.d")" ] ||
        fail "a job of root's wrote through a symlink that $1 planted"
}
fresh_state 65534:65534 0755
run_jobs clean
written 65534
# Run as the folder's owner (an admin user's cron), the jobs write without setpriv, which
# needs root.
fresh_state 65534:65534 0755
run_jobs clean setpriv --reuid=65534 --regid=65534 --clear-groups
written 65534 "run as the folder's owner"
fresh_state 0:0 0755
run_jobs clean
written 0 "root's folder"
fresh_state 65534:65534 0755
plant 65534:65534
run_jobs planted
untouched "the state folder's owner"
# A folder of root's that its group may write: the group's symlinks are refused too.
fresh_state 0:65534 0775
plant 65534:65534
run_jobs planted
untouched "the state folder's group"
