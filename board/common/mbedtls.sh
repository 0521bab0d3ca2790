#!/bin/sh
# Fetch, verify, unpack and build mbedtls as static libraries for one board.
# Usage: mbedtls.sh DL_DIR OUT_DIR DEB_VERSION UPSTREAM_VERSION DSC_SHA256 CC AR CFLAGS [CONFIG_H]
# CONFIG_H (when given and not empty) replaces mbedtls' include/mbedtls/config.h before the
# build, so the library and everything that includes the installed headers agree on it
# (a -DMBEDTLS_CONFIG_FILE would have to be repeated in every user's flags). mbedtls' own
# stays beside it as config-default.h, for reference.
set -eu
dl=$1 out=$2 debver=$3 ver=$4 dsc_sha=$5 cc=$6 ar=$7 cflags=$8 config=${9:-}
dsc=mbedtls_$debver.dsc

mkdir -p "$dl"
if [ ! -f "$dl/$dsc" ]; then
	echo "fetching mbedtls $debver source package into $dl"
	(cd "$dl" && apt-get source --download-only "mbedtls=$debver") || {
		echo "mbedtls: 'apt-get source mbedtls=$debver' failed. It needs a deb-src entry" >&2
		echo "(make deps adds one) and that version in the archive; if Debian moved on," >&2
		echo "update MBEDTLS_DEB_VERSION and MBEDTLS_DSC_SHA256 in board/common/mbedtls.mk." >&2
		exit 1
	}
fi
got=$(sha256sum "$dl/$dsc" | cut -d' ' -f1)
if [ "$got" != "$dsc_sha" ]; then
	echo "mbedtls: $dl/$dsc has SHA-256 $got, expected $dsc_sha (pinned in mbedtls.mk)" >&2
	exit 1
fi

rm -rf "$out"
mkdir -p "$out/lib"
# dpkg-source verifies the tarballs against the checksums in the (verified) .dsc and
# applies Debian's patches. (It only warns when it cannot check the maintainer's
# signature: the pinned .dsc checksum above is what we rely on.)
dpkg-source -x "$dl/$dsc" "$out/src"

header=$out/src/include/mbedtls/version.h
if ! grep -q "MBEDTLS_VERSION_STRING *\"$ver\"" "$header"; then
	echo "mbedtls: $header does not say version $ver" >&2
	exit 1
fi

if [ -n "$config" ]; then
	mv "$out/src/include/mbedtls/config.h" "$out/src/include/mbedtls/config-default.h"
	cp "$config" "$out/src/include/mbedtls/config.h"
fi

make -C "$out/src/library" -j"$(nproc 2>/dev/null || echo 2)" CC="$cc" AR="$ar" \
	CFLAGS="$cflags" static
cp "$out"/src/library/libmbedtls.a "$out"/src/library/libmbedx509.a \
	"$out"/src/library/libmbedcrypto.a "$out/lib/"
cp -r "$out/src/include" "$out/include"
