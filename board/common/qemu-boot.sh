#!/bin/sh
# Boots a board under qemu-system with the image `make install` laid out in IMAGE_DIR, our
# tests and the board's collector in an initramfs (board/common/boot-root.sh):
#   virt     qemu's virt machine (QEMU_SYSTEM) with the kernel of KERNEL_PKG and a device
#            tree made big.LITTLE (CPUs 0-1 LITTLE, 2-3 big); inside, `jitt hal`, the suite
#            (tests/run.sh, its result to RESULT), then tests/image-check.sh (to IMAGE_RESULT)
#   raspi3b  a Raspberry Pi 3 (board/common/raspi3b-boot.sh: Debian's arm64 kernel and its
#            bcm2837 device tree); inside, `jitt hal` and image-check.sh only (RESULT "-")
#
# usage: qemu-boot.sh MACHINE NAME OUT_DIR DL_DIR BIN_DIR IMAGE_DIR COLLECTOR RESULT
#                     IMAGE_RESULT BUSYBOX_PKG ["QEMU_SYSTEM" KERNEL_PKG CONSOLE]
# KERNEL_PKG is a Debian meta-package (linux-image-cloud-arm64:arm64): the kernel it depends
# on today is fetched, so the script follows the archive's ABI bumps by itself.
set -eu
machine=$1 name=$2 out=$3 dl=$4 bin=$5 image=$6 collector=$7 result=$8 image_result=$9
bbpkg=${10} qemu=${11:-} kpkg=${12:-} console=${13:-}
src=$(cd "$(dirname "$0")/../.." && pwd)
marker="jitt-boot: end" # the /init's last line
mkdir -p "$out" "$dl"
[ "$result" = - ] || rm -f "$result"
rm -f "$image_result"

# ---- packages from Debian's archive, cached in DL_DIR ----
fetch() { # package:arch -> path of its .deb in DL_DIR
	pkg=$1
	deb=$(ls "$dl/${pkg%%:*}"_*_"${pkg##*:}".deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		(cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1) ||
			{ echo "qemu-boot: apt-get download $pkg failed" >&2; exit 1; }
		deb=$(ls "$dl/${pkg%%:*}"_*_"${pkg##*:}".deb | head -n 1)
	fi
	echo "$deb"
}
# unpack_kernel META: the kernel Debian's meta-package (name:arch) depends on today, into
# $out/kernel.
unpack_kernel() {
	dep=$(apt-cache depends "$1" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[^ ]*\)/\1/p' | head -n 1)
	[ -n "$dep" ] || { echo "qemu-boot: cannot resolve $1 (apt-get update?)" >&2; exit 1; }
	rm -rf "$out/kernel"
	dpkg-deb -x "$(fetch "${dep%%:*}:${1##*:}")" "$out/kernel"
}
rm -rf "$out/busybox"
dpkg-deb -x "$(fetch "$bbpkg")" "$out/busybox"
log=$out/console.log

case $machine in
virt)
	unpack_kernel "$kpkg"
	kernel=$(ls "$out"/kernel/boot/vmlinuz-* | head -n 1)

	# A device tree with two LITTLE and two big cores.
	$qemu -nic none -machine dumpdtb="$out/virt.dtb" -nographic >/dev/null 2>&1
	dtc -q -I dtb -O dts -o "$out/virt.dts" "$out/virt.dtb"
	awk '/cpu@[0-9]+ \{/ { print; n = substr($1, 5) + 0;
			printf "\t\t\tcapacity-dmips-mhz = <%d>;\n", n < 2 ? 512 : 1024; next } { print }' \
		"$out/virt.dts" >"$out/virt-big-little.dts"
	dtc -q -I dts -O dtb -o "$out/virt-big-little.dtb" "$out/virt-big-little.dts"

	sh "$src/board/common/boot-root.sh" "$name (qemu-system)" "$out" "$out/busybox/bin/busybox" \
		"$bin" "$image" "$collector" 1 "$marker"
	echo "booting $(basename "$kernel") under ${qemu%% *}; console in $log"
	timeout 1800 $qemu -nographic -nic none -no-reboot -dtb "$out/virt-big-little.dtb" \
		-kernel "$kernel" -initrd "$out/initramfs.cpio.gz" \
		-append "console=$console panic=-1 quiet" </dev/null >"$log" 2>&1 || true
	tr -d '\r' <"$log" >"$log.txt"
	;;
raspi3b)
	sh "$src/board/common/boot-root.sh" "$name (raspi3b)" "$out" "$out/busybox/bin/busybox" \
		"$bin" "$image" "$collector" 0 "$marker"
	# Debian's generic arm64 flavour has the BCM2835 platform, the mini UART's driver and
	# console built in, and CONFIG_COMPAT (the armv7 build's 32-bit programs); its package
	# carries the Pi's device trees.
	unpack_kernel linux-image-arm64:arm64
	sh "$src/board/common/raspi3b-boot.sh" "$out/raspi3b" "$out/kernel" "$out/initramfs.cpio.gz" \
		"$marker" "$log.txt" || true
	;;
*)
	echo "qemu-boot: no machine $machine (virt, raspi3b)" >&2
	exit 2
	;;
esac
sh "$src/board/common/boot-results.sh" "$name-$machine" "$log.txt" "$marker" "$result" \
	"$image_result"
