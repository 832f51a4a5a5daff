#!/usr/bin/env bash
# Runs the whole test suite: installs the C libraries if missing, lints, builds, tests.
set -eu

usage() {
    cat <<'USAGE'
usage: scripts/test.sh [--tsan | --install]

With no option: lints (scripts/lint.sh), builds, checks the installation, runs a short
crash soak, then the whole suite in parallel.

  --tsan  builds with ThreadSanitizer into .build-tsan and runs the daemon tests (the put
          pipeline and group commit among them) and the event loop tests under it; the
          assetd and assetctl they start are sanitized too. Each process writes its reports
          to .build-tsan/reports; any report fails the run. Several times slower than a
          plain run, and a build of its own (about as long as the first plain build).
  --install
          only checks the installation, on the debug build: scripts/install.sh and
          scripts/package.sh into a temporary folder (never this machine's /usr), and
          lintian on the package.
USAGE
}

tsan=false
install_only=false
case "${1:-}" in
    "") ;;
    --tsan) tsan=true ;;
    --install) install_only=true ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 64 ;;
esac

cd "$(dirname "$0")/.."
. scripts/deps.sh

# install.sh and package.sh with the debug build's binaries, into a temporary folder.
check_install() {
    local tmp status=0
    tmp=$(mktemp -d)
    # Not `( … ) || status=$?`: bash ignores set -e inside a subshell whose status is tested.
    set +e
    (
        set -e
        bin=$(swift build --show-bin-path)
        scripts/install.sh --destdir "$tmp/dest" --bin-dir "$bin" >/dev/null
        for f in usr/local/bin/assetd usr/local/bin/assetctl usr/local/share/man/man8/assetd.8 \
            usr/local/share/man/man1/assetctl.1 usr/local/share/man/man5/assetd.toml.5 \
            usr/local/lib/systemd/system/assetd.service usr/local/lib/tmpfiles.d/assetd.conf \
            etc/assetd/assetd.toml etc/cron.d/assetd; do
            [ -f "$tmp/dest/$f" ] || { echo "install.sh did not install /$f" >&2; exit 1; }
        done
        grep -q '^ExecStart=/usr/local/bin/assetd --config /etc/assetd/assetd.toml$' "$tmp/dest/usr/local/lib/systemd/system/assetd.service"
        # The default root made at boot if missing, 0755 root's; an existing one keeps the mode
        # and group its admin gave it (clients' group, setgid), boot after boot.
        if command -v systemd-tmpfiles >/dev/null; then
            conf=$tmp/dest/usr/local/lib/tmpfiles.d/assetd.conf
            systemd-tmpfiles --root="$tmp/boot" --create "$conf"
            [ "$(stat -c %a:%u "$tmp/boot/var/cache/assetd")" = "755:$(id -u)" ] || { echo "tmpfiles made $(stat -c %a:%u "$tmp/boot/var/cache/assetd")" >&2; exit 1; }
            chmod 2775 "$tmp/boot/var/cache/assetd"
            if [ "$(id -u)" -eq 0 ]; then chgrp 3001 "$tmp/boot/var/cache/assetd"; fi
            before=$(stat -c %a:%u:%g "$tmp/boot/var/cache/assetd")
            systemd-tmpfiles --root="$tmp/boot" --create "$conf"
            after=$(stat -c %a:%u:%g "$tmp/boot/var/cache/assetd")
            [ "$after" = "$before" ] || { echo "tmpfiles reset the default root: $before -> $after" >&2; exit 1; }
        else
            echo "installation check: no systemd-tmpfiles, its line was not tried" >&2
        fi
        # Its jobs parse, and none of root's writes into a folder another user may own.
        scripts/check-cron.sh "$tmp/dest/etc/cron.d/assetd"
        # ... and it judges every job, each whole: one of root's that writes as root is refused
        # after the good ones, its write after its setpriv, or through an `$owner` never set.
        stats_job=$(grep -P '^17 3 \* \* \*\troot\t' etc/cron.d/assetd)
        for bad in "$stats_job && cp stats.json stats.json.1" \
            "0 5 * * *"$'\t'root$'\t'"cd /var/lib/assetd && \$owner sh -c 'cat >x'" \
            "0 5 * * *"$'\t'root$'\t'"assetctl stats >/var/lib/assetd/x" \
            "0 5 * * *"$'\t'root$'\t'"cd /var/lib/assetd && owner=\"setpriv --reuid=1\" && \$owner assetctl stats >x"; do
            { cat etc/cron.d/assetd; echo "$bad"; } >"$tmp/bad-cron"
            if scripts/check-cron.sh "$tmp/bad-cron" 2>"$tmp/bad-cron.log"; then
                echo "check-cron.sh passed a job of root's that writes as root: $bad" >&2
                exit 1
            fi
            grep -q "^check-cron.sh: $tmp/bad-cron: a job of root's " "$tmp/bad-cron.log" || { cat "$tmp/bad-cron.log" >&2; exit 1; }
        done
        # No folder systemd manages for the unit (and chowns to User=) is or holds a root.
        scripts/check-unit.sh "$tmp/dest/usr/local/lib/systemd/system/assetd.service" "$tmp/dest/etc/assetd/assetd.toml"
        # A second install keeps the administrator's config.
        echo "# edited" >>"$tmp/dest/etc/assetd/assetd.toml"
        scripts/install.sh --prefix /opt/assetd --sysconfdir /etc --destdir "$tmp/dest" --bin-dir "$bin" >/dev/null
        grep -q '^# edited' "$tmp/dest/etc/assetd/assetd.toml" || { echo "install.sh replaced the config" >&2; exit 1; }
        grep -q '^ExecStart=/opt/assetd/bin/assetd --config /etc/assetd/assetd.toml$' "$tmp/dest/opt/assetd/lib/systemd/system/assetd.service"
        # Another prefix with its own sysconfdir: the unit reads the config installed there, and
        # the install says what cron and systemd will not find by themselves.
        scripts/install.sh --prefix /opt/assetd --destdir "$tmp/opt" --bin-dir "$bin" >"$tmp/opt.log"
        unit=$tmp/opt/opt/assetd/lib/systemd/system/assetd.service
        grep -q '^ExecStart=/opt/assetd/bin/assetd --config /opt/assetd/etc/assetd/assetd.toml$' "$unit" ||
            { grep ExecStart "$unit" >&2; echo "the unit reads another config than the one installed" >&2; exit 1; }
        if grep -qE '(^|[^a-z])/etc/assetd/' "$unit"; then echo "the unit still names /etc/assetd" >&2; exit 1; fi
        [ -f "$tmp/opt/opt/assetd/etc/assetd/assetd.toml" ] && [ -f "$tmp/opt/opt/assetd/etc/cron.d/assetd" ]
        grep -qF 'ln -s /opt/assetd/etc/cron.d/assetd /etc/cron.d/assetd' "$tmp/opt.log" ||
            { cat "$tmp/opt.log" >&2; echo "install.sh did not say where to link the cron file" >&2; exit 1; }
        grep -qF 'systemctl link /opt/assetd/lib/systemd/system/assetd.service' "$tmp/opt.log"
        # A per-user prefix keeps everything under it, /etc included, and advises no system
        # unit or /etc/cron.d link, which cannot use it.
        HOME=$tmp/home scripts/install.sh --prefix "$tmp/home/.local" --bin-dir "$bin" >"$tmp/home.log"
        grep -qF 'crontab -e' "$tmp/home.log" || { cat "$tmp/home.log" >&2; echo "no crontab advice" >&2; exit 1; }
        if grep -qE 'systemctl link|ln -s' "$tmp/home.log"; then
            cat "$tmp/home.log" >&2; echo "install.sh advised system links for a per-user prefix" >&2; exit 1
        fi
        # The prefix / makes no // paths, and its config is the system's in /etc.
        scripts/install.sh --prefix / --destdir "$tmp/slash" --bin-dir "$bin" >"$tmp/slash.log"
        if grep -qF '//' "$tmp/slash.log"; then cat "$tmp/slash.log" >&2; echo "install.sh printed // paths" >&2; exit 1; fi
        grep -q '^ExecStart=/bin/assetd --config /etc/assetd/assetd.toml$' "$tmp/slash/lib/systemd/system/assetd.service"
        for f in bin/assetd etc/assetd/assetd.toml etc/cron.d/assetd; do
            [ -f "$tmp/home/.local/$f" ] || { echo "install.sh --prefix did not install $f under it" >&2; exit 1; }
        done
        grep -q "^PATH=$tmp/home/.local/bin:" "$tmp/home/.local/etc/cron.d/assetd"
        # ... with a config that leaves the root daemon's paths to the per-user defaults.
        if grep -qE '^(path|socket|roots) = ' "$tmp/home/.local/etc/assetd/assetd.toml"; then
            echo "install.sh --prefix left root paths set in the config" >&2
            exit 1
        fi
        "$bin/assetd" --config "$tmp/home/.local/etc/assetd/assetd.toml" --check-config >/dev/null

        deb=$(scripts/package.sh --bin-dir "$bin" --output "$tmp" --compress gzip 2>"$tmp/package.log") ||
            { cat "$tmp/package.log" >&2; exit 1; }
        dpkg-deb -x "$deb" "$tmp/pkg"
        for f in usr/bin/assetd usr/bin/assetctl usr/share/man/man8/assetd.8.gz usr/lib/systemd/system/assetd.service \
            etc/assetd/assetd.toml usr/share/assetd/cron.d/assetd usr/share/doc/assetd/copyright \
            usr/lib/tmpfiles.d/assetd.conf; do
            [ -f "$tmp/pkg/$f" ] || { echo "the package lacks /$f" >&2; exit 1; }
        done
        [ "$(dpkg-deb -f "$deb" Version)" = "$("$tmp/pkg/usr/bin/assetctl" --version)" ]
        grep -q '^ExecStart=/usr/bin/assetd ' "$tmp/pkg/usr/lib/systemd/system/assetd.service"
        # Errors and warnings fail; informational tags do not. The debug binaries load the
        # toolchain's Swift runtime through their RUNPATH; a release package links it in.
        lintian --fail-on error,warning --suppress-tags custom-library-search-path "$deb"
        # Installed by dpkg into an empty root of its own (as root only: dpkg sets owners), its
        # postinst run there: it creates the state folder and enables nothing.
        if [ "$(id -u)" -eq 0 ]; then
            mkdir -p "$tmp/root/var/lib/dpkg/info" "$tmp/root/var/lib/dpkg/updates"
            touch "$tmp/root/var/lib/dpkg/status"
            dpkg --root="$tmp/root" --force-script-chrootless --force-depends -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; exit 1; }
            [ -x "$tmp/root/usr/bin/assetd" ] && [ -d "$tmp/root/var/lib/assetd" ]
            [ "$(stat -c %a "$tmp/root/var/lib/assetd")" = 750 ]
            [ "$(stat -c %a:%u "$tmp/root/var/cache/assetd")" = 755:0 ]
            [ ! -e "$tmp/root/etc/systemd/system/multi-user.target.wants/assetd.service" ]
            [ ! -e "$tmp/root/etc/cron.d/assetd" ]
            # An upgrade (here the same package again) keeps the modes and group the admin gave
            # (a state folder a group may read: assetd refuses one a group other than its
            # user's own may write).
            chmod 2750 "$tmp/root/var/lib/assetd"
            chmod 2775 "$tmp/root/var/cache/assetd"
            chgrp 3001 "$tmp/root/var/lib/assetd" "$tmp/root/var/cache/assetd"
            dpkg --root="$tmp/root" --force-script-chrootless --force-depends -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; exit 1; }
            kept=$(stat -c %a:%g "$tmp/root/var/lib/assetd" "$tmp/root/var/cache/assetd" | tr '\n' ' ')
            [ "$kept" = "2750:3001 2775:3001 " ] || { echo "the upgrade reset the folders: $kept" >&2; exit 1; }
            dpkg --root="$tmp/root" --force-script-chrootless -r assetd >/dev/null
            [ ! -e "$tmp/root/usr/bin/assetd" ] && [ -f "$tmp/root/etc/assetd/assetd.toml" ]
        else
            echo "installation check: not root, the package was not installed with dpkg" >&2
        fi
    )
    status=$?
    set -e
    rm -rf "$tmp"
    [ $status -eq 0 ] || echo "installation check failed" >&2
    return $status
}

if $install_only; then
    swift build
    check_install
    exit
fi

if $tsan; then
    build=.build-tsan
    reports=$PWD/$build/reports
    swift build --build-tests --sanitize=thread --build-path "$build"
    # Lets TSan see Synchronization's Mutex wait for a lock (why: the file's head comment).
    clang -shared -fPIC -O1 -Wall -o "$build/libtsan-mutex.so" scripts/tsan-mutex.c
    rm -rf "$reports"
    mkdir -p "$reports"
    chmod 1777 "$reports"  # the tests that act as nobody run sanitized assetctl too
    status=0
    LD_PRELOAD="$PWD/$build/libtsan-mutex.so" \
        TSAN_OPTIONS="log_path=$reports/tsan second_deadlock_stack=1" \
        swift test --skip-build --sanitize=thread --build-path "$build" \
        --filter '^(DaemonTests|EventLoopTests)\.' || status=$?
    if [ -n "$(ls "$reports")" ]; then
        cat "$reports"/* >&2
        echo "ThreadSanitizer: $(cat "$reports"/* | grep -c '^WARNING: ThreadSanitizer') reports from" \
            "$(ls "$reports" | wc -l) processes (in $reports)" >&2
        exit 1
    fi
    exit $status
fi

scripts/lint.sh
swift build --build-tests
check_install
# A short crash soak first, so that swift test's own summary closes the output.
scripts/soak.sh 3 2
swift test --skip-build --parallel
