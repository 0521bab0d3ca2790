#!/bin/sh
# Installs everything jitt needs to build and test, idempotently, from Debian's archive:
# the host musl toolchain, the aarch64/armhf cross compilers with musl-dev of those
# architectures and their glibc headers (the SDK has a glibc libjitt too), qemu (user and system), kconfig-frontends and the tools to fetch mbedtls'
# source package; for the uploader's tests, the host's mbedtls and SQLite (the reference
# collector), nginx, curl and openssl; tcl, whose tclsh generates SQLite's amalgamation
# (board/common/sqlite.sh: the collector built for a board, speedtest1); for the viewer
# test (tests/viewer-check.sh), Node.js with npm and Chromium; for the symbols test
# (tests/symbols-check.sh), elfutils' debuginfod server, which serves a stripped program's
# debug file to `jitt`'s own client, and binutils' objcopy and strip, which make that
# program and its debug file. The real programs' tests (tests/sdk-check.sh,
# nonlocal-check.sh, real-programs.sh) build with pkgconf, cmake, g++ and libevent, and
# compare with perf. The SDK's clang flavour (libjitt-clang.a, host) is archived by llvm-14's
# llvm-ar, and an app links it with lld, whose LTO inlines the trace hooks (clang's
# -fuse-ld=lld runs ld.lld, which the lld package provides). Called by `make deps`, and by
# any make target that finds a tool missing.
#
# Usage: deps.sh            install what is missing (root only)
#        deps.sh --check    exit 0 when all is there, 1 otherwise; prints what is missing
set -eu

# Packages, with the command or file that proves each one is installed. The proof is what
# the build actually uses, so a half-removed package is noticed too.
PACKAGES="
musl-tools:/usr/bin/musl-gcc
musl-dev:/usr/lib/x86_64-linux-musl/libc.a
gcc-aarch64-linux-gnu:/usr/bin/aarch64-linux-gnu-gcc
gcc-arm-linux-gnueabihf:/usr/bin/arm-linux-gnueabihf-gcc
musl-dev:arm64:/usr/lib/aarch64-linux-musl/musl-gcc.specs
musl-dev:armhf:/usr/lib/arm-linux-musleabihf/musl-gcc.specs
libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/include/stdio.h
libc6-dev-armhf-cross:/usr/arm-linux-gnueabihf/include/stdio.h
pkgconf:/usr/bin/pkgconf
cmake:/usr/bin/cmake
g++:/usr/bin/g++
libevent-dev:/usr/include/event2/event.h
linux-perf:/usr/bin/perf
qemu-user-static:/usr/bin/qemu-aarch64-static
qemu-system-arm:/usr/bin/qemu-system-aarch64
kconfig-frontends-nox:/usr/bin/kconfig-conf
dpkg-dev:/usr/bin/dpkg-source
file:/usr/bin/file
make:/usr/bin/make
device-tree-compiler:/usr/bin/dtc
cpio:/usr/bin/cpio
clang-14:/usr/bin/clang-14
lld:/usr/bin/ld.lld
llvm-14:/usr/bin/llvm-ar-14
libtsan2:/usr/lib/x86_64-linux-gnu/libtsan.so.2
valgrind:/usr/bin/valgrind
libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
python3:/usr/bin/python3
protobuf-compiler:/usr/bin/protoc
openssl:/usr/bin/openssl
curl:/usr/bin/curl
nginx-light:/usr/sbin/nginx
libmbedtls-dev:/usr/include/mbedtls/ssl.h
libsqlite3-dev:/usr/include/sqlite3.h
tcl:/usr/bin/tclsh
nodejs:/usr/bin/node
npm:/usr/bin/npm
chromium:/usr/bin/chromium
debuginfod:/usr/bin/debuginfod
binutils:/usr/bin/objcopy
"

missing_packages() {
	for entry in $PACKAGES; do
		proof=${entry##*:}
		pkg=${entry%:*}
		[ -e "$proof" ] || printf '%s\n' "$pkg"
	done
}

# A deb-src stanza for every deb stanza we know, so that `apt-get source mbedtls` works.
have_deb_src() {
	grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

add_deb_src() {
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
			>/etc/apt/sources.list.d/jitt-deb-src.sources
	elif [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/jitt-deb-src.list
	else
		echo "deps: no apt sources found to derive a deb-src entry from" >&2
		return 1
	fi
}

missing=$(missing_packages)
need_src=0
have_deb_src || need_src=1
need_arch=""
for arch in arm64 armhf; do
	dpkg --print-foreign-architectures 2>/dev/null | grep -qx "$arch" || need_arch="$need_arch $arch"
done

if [ -z "$missing" ] && [ $need_src = 0 ] && [ -z "$need_arch" ]; then
	exit 0
fi

if [ "${1:-}" = "--check" ]; then
	[ -n "$missing" ] && echo "deps: missing packages:" $missing
	[ $need_src = 1 ] && echo "deps: no deb-src entry in apt's sources"
	[ -n "$need_arch" ] && echo "deps: foreign architectures not enabled:$need_arch"
	exit 1
fi

if [ "$(id -u)" != 0 ]; then
	echo "deps: installing the build dependencies needs root. Run:" >&2
	echo "  sudo sh $(cd "$(dirname "$0")" && pwd)/$(basename "$0")" >&2
	echo "or by hand:" >&2
	[ -n "$need_arch" ] && for a in $need_arch; do echo "  sudo dpkg --add-architecture $a" >&2; done
	echo "  sudo apt-get update && sudo apt-get install -y" $missing >&2
	exit 1
fi

for a in $need_arch; do
	dpkg --add-architecture "$a"
done
[ $need_src = 1 ] && add_deb_src

# The armhf index of the security suite sometimes fails with "File has unexpected size";
# apt skips it and nothing we need comes from it, so a failed update is not fatal: the
# install below is what must succeed.
apt-get update -q || echo "deps: apt-get update reported errors; trying the install anyway" >&2
if [ -n "$missing" ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi

left=$(missing_packages)
if [ -n "$left" ]; then
	echo "deps: still missing after install:" $left >&2
	exit 1
fi
echo "deps: all build dependencies are installed"
