#!/usr/bin/env bash
# Installs assetd: the binaries, the man pages, the systemd unit, the example config (never over
# an existing one) and the cron file. scripts/package.sh builds a Debian package of the same.
set -eu

usage() {
    cat <<'USAGE'
usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--sysconfdir DIR] [--bin-dir DIR]

Builds assetd and assetctl (release, Swift runtime linked in) and installs:

  PREFIX/bin/assetd, PREFIX/bin/assetctl
  PREFIX/share/man/man1/assetctl.1, man5/assetd.toml.5, man8/assetd.8
  PREFIX/lib/systemd/system/assetd.service   (ExecStart names PREFIX/bin/assetd and
                                              --config SYSCONFDIR/assetd/assetd.toml)
  PREFIX/lib/tmpfiles.d/assetd.conf           (the default managed root, /var/cache/assetd)
  SYSCONFDIR/assetd/assetd.toml               (only if there is none: yours is kept)
  SYSCONFDIR/cron.d/assetd                    (only if there is none)

  --prefix DIR   where the files go, /usr/local by default. systemd finds the unit under
                 /usr/local and /usr; for another prefix, link it into /etc/systemd/system.
  --destdir DIR  a folder prepended to every path (a staging root, as for packaging);
                 nothing is installed outside it.
  --sysconfdir DIR  where the config and cron file go: /etc for the prefixes /usr and
                 /usr/local, PREFIX/etc for any other (a per-user install writes nothing
                 under /etc; use crontab(1) with its cron file's lines). cron reads only
                 /etc/cron.d: for a system-wide install with another SYSCONFDIR, link
                 SYSCONFDIR/cron.d/assetd there (ln -s, both root's), as the install says.
  --bin-dir DIR  install the assetd and assetctl found in DIR instead of building them.

Nothing is enabled or started. Then, as root:

  systemctl daemon-reload && systemctl enable --now assetd
USAGE
}

prefix=/usr/local
destdir=""
sysconfdir=""
bin_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
        --destdir) destdir=${2:?--destdir needs a folder}; shift 2 ;;
        --sysconfdir) sysconfdir=${2:?--sysconfdir needs a folder}; shift 2 ;;
        --bin-dir) bin_dir=${2:?--bin-dir needs a folder}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 64 ;;
    esac
done
case "$prefix" in
    /*) ;;
    *) echo "install.sh: --prefix must be absolute: $prefix" >&2; exit 64 ;;
esac
prefix=${prefix%/}
[ -n "$prefix" ] || prefix=/
# What paths are made of: empty for /, which would give //lib, //etc.
base=${prefix%/}
if [ -z "$sysconfdir" ]; then
    case "$prefix" in
        /usr/local | /usr) sysconfdir=/etc ;;
        *) sysconfdir=$base/etc ;;
    esac
fi
case "$sysconfdir" in
    /*) sysconfdir=${sysconfdir%/} ;;
    *) echo "install.sh: --sysconfdir must be absolute: $sysconfdir" >&2; exit 64 ;;
esac

cd "$(dirname "$0")/.."
if [ -z "$bin_dir" ]; then
    . scripts/deps.sh
    # The Swift runtime linked in, so the binaries need no toolchain where they run.
    swift build -c release --static-swift-stdlib --product assetd
    swift build -c release --static-swift-stdlib --product assetctl
    bin_dir=$(swift build -c release --static-swift-stdlib --show-bin-path)
fi
for exe in assetd assetctl; do
    [ -x "$bin_dir/$exe" ] || { echo "install.sh: no $exe in $bin_dir" >&2; exit 66; }
done

root=${destdir%/}
installed() { echo "  $1"; }

install -d "$root$base/bin"
for exe in assetd assetctl; do
    install -m 0755 "$bin_dir/$exe" "$root$base/bin/$exe"
    installed "$base/bin/$exe"
done

for page in man/assetctl.1 man/assetd.toml.5 man/assetd.8; do
    section=${page##*.}
    install -d "$root$base/share/man/man$section"
    install -m 0644 "$page" "$root$base/share/man/man$section/"
    installed "$base/share/man/man$section/$(basename "$page")"
done

# The unit and the cron file name the binaries where they are now, the unit the config where
# it is now (the daemon started with a config file that is not there exits 78).
install -d "$root$base/lib/systemd/system"
sed -e "s|/usr/local/bin/assetd|$base/bin/assetd|" -e "s|/etc/assetd/assetd.toml|$sysconfdir/assetd/assetd.toml|g" \
    etc/systemd/assetd.service \
    >"$root$base/lib/systemd/system/assetd.service"
chmod 0644 "$root$base/lib/systemd/system/assetd.service"
installed "$base/lib/systemd/system/assetd.service"
# The default managed root, made by tmpfiles.d rather than by the unit (etc/tmpfiles.d's
# comment says why); made now too when installing for this system, as at boot.
install -d "$root$base/lib/tmpfiles.d"
install -m 0644 etc/tmpfiles.d/assetd.conf "$root$base/lib/tmpfiles.d/assetd.conf"
installed "$base/lib/tmpfiles.d/assetd.conf"
if [ -z "$root" ] && [ "$sysconfdir" = /etc ] && [ "$(id -u)" -eq 0 ] && command -v systemd-tmpfiles >/dev/null; then
    systemd-tmpfiles --create "$base/lib/tmpfiles.d/assetd.conf" || true
fi

# Files under /etc belong to the administrator: an existing one is left as it is.
config_file() {
    local source=$1 target=$2
    install -d "$(dirname "$root$target")"
    if [ -e "$root$target" ]; then
        echo "  $target exists: kept as it is"
    else
        install -m 0644 "$source" "$root$target.tmp"
        mv "$root$target.tmp" "$root$target"
        installed "$target"
    fi
}
# Outside /etc (a per-user prefix) the root daemon's paths are commented out, so the daemon
# falls back to its per-user defaults (assetd(8), FILES).
config=$(mktemp)
cron=$(mktemp)
trap 'rm -f "$config" "$cron"' EXIT
if [ "$sysconfdir" = /etc ]; then
    cp etc/assetd.toml "$config"
else
    sed -E 's/^(path|socket|roots) = /# &/' etc/assetd.toml >"$config"
fi
config_file "$config" "$sysconfdir/assetd/assetd.toml"
# cron's PATH has /usr/local/bin and /usr/bin; another prefix goes in front.
case "$prefix" in
    /usr/local | /usr) cp etc/cron.d/assetd "$cron" ;;
    *) sed "s|^PATH=|PATH=$base/bin:|" etc/cron.d/assetd >"$cron" ;;
esac
config_file "$cron" "$sysconfdir/cron.d/assetd"

# What no file here does: cron reads /etc/cron.d, systemd its own folders. Neither takes a
# prefix in a home folder: the unit runs as root with ProtectHome=yes, which hides it, and
# cron ignores a file in /etc/cron.d that is not root's.
per_user=false
case "${HOME:-/}" in
    /) ;;
    *) case "$base/" in "${HOME%/}"/*) per_user=true ;; esac ;;
esac
if $per_user; then
    echo "for one user: run $base/bin/assetd from a systemd --user unit or your crontab" \
        "(crontab -e, with the lines of $sysconfdir/cron.d/assetd less their user field)"
else
    case "$prefix" in
        /usr/local | /usr) ;;
        *) echo "systemd finds no unit under $prefix: systemctl link $base/lib/systemd/system/assetd.service" ;;
    esac
    if [ "$sysconfdir" != /etc ]; then
        echo "cron reads only /etc/cron.d: for the maintenance jobs, as root:" \
            "ln -s $sysconfdir/cron.d/assetd /etc/cron.d/assetd (a user's own daemon: crontab -e, with its lines)"
    fi
fi
