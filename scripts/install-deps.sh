#!/bin/sh
# install-deps.sh installs, from Debian, what the test suite needs and the
# machine lacks: the kernel sources the bindings are generated from and
# proven against (linux-source-6.12), gcc for the ABI proof and -race, and
# the archive tools to read the tarball, and clang with llvm (llvm-strip)
# to build tools/hltrace's BPF object, and prometheus (the server and
# promtool) for tools/hlexporter's tests, which have promtool check the
# exposition and a real Prometheus scrape the exporter, and systemd
# (systemd-analyze verify checks deploy/'s unit). It does nothing when all
# are there.
set -eu

# tools/hlsim's tests serve simulated devices over FUSE (the kernel's own;
# no fusermount or fuse3 package is needed): load the module where FUSE is
# one and not loaded yet. Without root this does nothing, and those tests
# skip.
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null || true

need=""
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in linux-source-6.12 gcc libc6-dev linux-libc-dev make tar xz-utils clang llvm prometheus systemd; do
	have "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install:$need" >&2; exit 1; }
	SUDO=sudo
fi
echo "install-deps: installing$need"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
