#!/usr/bin/env bash
# Build fio's t/io_uring from the source of the installed fio version (Debian's fio source
# package), or from a fio source tree given as FIO_SRC=/path. Result: tools/t_io_uring.
# The system's apt configuration is not changed: a private source list and state are used.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tools/t_io_uring
# portable: fio's configure builds for this CPU (-march=native) unless told not to, and such a
# binary dies of SIGILL on another CPU (the NVMe lab's emulated one); older builds are redone
if [ -x "$out" ] && [ -z "${FORCE:-}" ] && grep -qs '(portable)' tools/t_io_uring.version; then
    echo "tio: $out is built ($(cat tools/t_io_uring.version))"; exit 0
fi
mkdir -p tools
need=()
for t in gcc make; do command -v $t >/dev/null || need+=($t); done
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else echo "tio: missing ${need[*]}: apt-get install ${need[*]}" >&2; exit 1; fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${FIO_SRC:-}" ]; then
    src=$FIO_SRC
    version="source tree $FIO_SRC"
else
    ver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || { echo "tio: fio is not installed from Debian's packages; give FIO_SRC=/path/to/fio" >&2; exit 1; }
    . /etc/os-release
    uri=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
          | grep -m1 -E 'debian/?$|debian ' | awk '{print $2}' || true)
    uri=${uri:-http://deb.debian.org/debian}
    echo "deb-src $uri $VERSION_CODENAME main" > "$work/src.list"
    opts=(-o Dir::Etc::SourceList="$work/src.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$work/lists" -o Debug::NoLocking=1)
    mkdir -p "$work/lists/partial"
    apt-get "${opts[@]}" update -qq
    (cd "$work" && apt-get "${opts[@]}" source --download-only -qq "fio=$ver" >/dev/null)
    dpkg-source -x "$work"/fio_*.dsc "$work/fio" >/dev/null
    src=$work/fio
    version="fio $ver (Debian source)"
fi
(cd "$src" && ./configure --disable-native >/dev/null && make -j"$(nproc)" t/io_uring >/dev/null)
cp "$src/t/io_uring" "$out"
echo "$version (portable)" > tools/t_io_uring.version
echo "tio: built $out from $version"
