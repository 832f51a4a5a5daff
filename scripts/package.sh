#!/usr/bin/env bash
# Builds a Debian package of what scripts/install.sh installs, with dpkg-deb.
set -eu
umask 022

usage() {
    cat <<'USAGE'
usage: scripts/package.sh [--output DIR] [--bin-dir DIR] [--compress xz|gzip]

Builds assetd_VERSION_ARCH.deb (into DIR, the current folder by default) holding what
scripts/install.sh --prefix /usr installs: the binaries (stripped), the man pages, the
systemd unit, /etc/assetd/assetd.toml as a conffile (an edited one is never replaced), and
the cron file as /usr/share/assetd/cron.d/assetd. Installing the package creates the state
folder /var/lib/assetd and the default root /var/cache/assetd when they are missing (existing
ones keep their owner and mode) and enables nothing: start the daemon with

  systemctl enable --now assetd

and copy the cron file to /etc/cron.d to run the maintenance jobs. Check the package with
`lintian FILE.deb`.

  --output DIR   where the .deb goes.
  --bin-dir DIR  package the assetd and assetctl found in DIR instead of building them.
  --compress xz|gzip
                 how the package's contents are compressed: xz (the default, smallest) or
                 gzip (several times faster, as for a test).
USAGE
}

output=$PWD
bin_args=()
compress=xz
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output=${2:?--output needs a folder}; shift 2 ;;
        --bin-dir) bin_args=(--bin-dir "$(cd "${2:?--bin-dir needs a folder}" && pwd)"); shift 2 ;;
        --compress)
            compress=${2:?--compress needs xz or gzip}; shift 2
            case "$compress" in xz | gzip) ;; *) usage >&2; exit 64 ;; esac ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 64 ;;
    esac
done
output=$(cd "$output" && pwd)
cd "$(dirname "$0")/.."

version=$(sed -n 's/.*static let product = "\(.*\)".*/\1/p' Sources/ControlProtocol/Version.swift)
[ -n "$version" ] || { echo "package.sh: no version in Sources/ControlProtocol/Version.swift" >&2; exit 70; }
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/root

scripts/install.sh --prefix /usr --destdir "$pkg" "${bin_args[@]}" >&2  # its build and list on stderr: stdout is the .deb

if readelf -d "$pkg/usr/bin/assetd" | grep -q 'NEEDED.*libswiftCore'; then
    echo "package.sh: these binaries load the Swift runtime of the toolchain that built them:" \
        "the package runs only where that toolchain is; without --bin-dir it links the runtime in" >&2
fi
# Debian's layout: stripped binaries, compressed man pages, cron jobs left to the admin.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$pkg"/usr/bin/assetd "$pkg"/usr/bin/assetctl
gzip -9n "$pkg"/usr/share/man/man*/*
install -d "$pkg/usr/share/assetd/cron.d"
mv "$pkg/etc/cron.d/assetd" "$pkg/usr/share/assetd/cron.d/assetd"
rmdir "$pkg/etc/cron.d"

doc=$pkg/usr/share/doc/assetd
install -d "$doc"
cat >"$doc/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: assetd

Files: *
Copyright: 2026 The assetd authors
License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in the file /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
when=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
cat >"$stage/changelog" <<CHANGELOG
assetd ($version) unstable; urgency=medium

  * Release $version; CHANGELOG.md in the source says what it holds.

 -- assetd developers <assetd@users.noreply.github.com>  $(date -u -R -d "@$when")
CHANGELOG
gzip -9n -c "$stage/changelog" >"$doc/changelog.gz"
chmod 0644 "$doc"/*

install -d "$pkg/DEBIAN"
# The shared libraries the binaries load, as package names (libc6, libuv1, libsqlite3-0…).
mkdir -p "$stage/shlibs/debian"
echo "Source: assetd" >"$stage/shlibs/debian/control"
depends=$(cd "$stage/shlibs" && dpkg-shlibdeps -O -e"$pkg/usr/bin/assetd" -e"$pkg/usr/bin/assetctl" \
    2>"$stage/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
    cat "$stage/shlibdeps.log" >&2
    echo "package.sh: dpkg-shlibdeps found no shared libraries the binaries need" >&2
    exit 70
fi
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: assetd
Version: $version
Architecture: $arch
Maintainer: assetd developers <assetd@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $depends
Section: admin
Priority: optional
Description: file-asset lifecycle manager
 assetd keeps objects with JSON values in SQLite, links them to each other
 and to files with edges that carry delete rules, and unlinks a file only
 after the transaction that dropped its last reference is durable, and only
 inside its managed roots. Clients use a JSON-RPC control socket; assetctl is
 the command-line client. Policies (budgets, quotas, TTLs, leases, pins) make
 it a cache cleaner.
 .
 Installing the package enables nothing: start the daemon with
 "systemctl enable --now assetd", and copy /usr/share/assetd/cron.d/assetd to
 /etc/cron.d to run the maintenance jobs.
CONTROL
echo /etc/assetd/assetd.toml >"$pkg/DEBIAN/conffiles"
cat >"$pkg/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# The state folder, for a daemon started without systemd (the unit's StateDirectory makes the
# same), and the default managed root, as /usr/lib/tmpfiles.d/assetd.conf makes it at boot.
# Each only if missing: an existing one keeps the owner and mode its admin gave it at every
# upgrade (install -d would set its mode again). Nothing is enabled or started.
# DPKG_ROOT: installed into another root.
set -e
if [ "$1" = configure ]; then
    [ -d "$DPKG_ROOT/var/lib/assetd" ] || install -d -m 0750 "$DPKG_ROOT/var/lib/assetd"
    [ -d "$DPKG_ROOT/var/cache/assetd" ] || install -d -m 0755 "$DPKG_ROOT/var/cache/assetd"
fi
exit 0
POSTINST
chmod 0755 "$pkg/DEBIAN/postinst"
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/conffiles" "$pkg/DEBIAN/md5sums"

deb=$output/assetd_${version}_${arch}.deb
dpkg-deb --root-owner-group -Z"$compress" --build "$pkg" "$deb" >/dev/null
echo "$deb"
