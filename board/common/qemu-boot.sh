#!/bin/sh
# Boots a board's kernel under qemu-system with our programs and tests in an initramfs, runs
# `jitt hal` and tests/run.sh inside, and writes run.sh's result line to RESULT.
#
# usage: qemu-boot.sh NAME OUT_DIR DL_DIR BIN_DIR RESULT "QEMU_SYSTEM" KERNEL_PKG BUSYBOX_PKG CONSOLE
# KERNEL_PKG is a Debian meta-package (linux-image-cloud-arm64:arm64): the kernel it depends
# on today is fetched, so the script follows the archive's ABI bumps by itself.
set -eu
name=$1 out=$2 dl=$3 bin=$4 result=$5 qemu=$6 kpkg=$7 bbpkg=$8 console=$9
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" "$dl"
rm -f "$result"

# ---- the kernel and busybox, from Debian's archive, cached in DL_DIR ----
arch=${kpkg##*:}
kernel_pkg=$(apt-cache depends "$kpkg" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)/\1/p' | head -n 1)
[ -n "$kernel_pkg" ] || { echo "qemu-boot: cannot resolve $kpkg (apt-get update?)" >&2; exit 1; }
kernel_pkg=${kernel_pkg%%:*}:$arch
fetch() { # package -> path of its .deb in DL_DIR
	pkg=$1
	deb=$(ls "$dl/${pkg%%:*}"_*_"${pkg##*:}".deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		(cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1) ||
			{ echo "qemu-boot: apt-get download $pkg failed" >&2; exit 1; }
		deb=$(ls "$dl/${pkg%%:*}"_*_"${pkg##*:}".deb | head -n 1)
	fi
	echo "$deb"
}
kdeb=$(fetch "$kernel_pkg")
bbdeb=$(fetch "$bbpkg")
rm -rf "$out/kernel" "$out/busybox" "$out/root"
dpkg-deb -x "$kdeb" "$out/kernel"
dpkg-deb -x "$bbdeb" "$out/busybox"
kernel=$(ls "$out"/kernel/boot/vmlinuz-* | head -n 1)

# ---- a device tree with two LITTLE and two big cores ----
$qemu -nic none -machine dumpdtb="$out/virt.dtb" -nographic >/dev/null 2>&1
dtc -q -I dtb -O dts -o "$out/virt.dts" "$out/virt.dtb"
awk '/cpu@[0-9]+ \{/ { print; n = substr($1, 5) + 0;
		printf "\t\t\tcapacity-dmips-mhz = <%d>;\n", n < 2 ? 512 : 1024; next } { print }' \
	"$out/virt.dts" >"$out/virt-big-little.dts"
dtc -q -I dts -O dtb -o "$out/virt-big-little.dtb" "$out/virt-big-little.dts"

# ---- the initramfs ----
root=$out/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/jitt"
cp "$out/busybox/bin/busybox" "$root/bin/busybox"
mkdir -p "$root/jitt/bin"
for prog in "$bin"/*; do
	case $prog in *.map) ;; *) cp "$prog" "$root/jitt/bin/" ;; esac
done
cp -r "$src/tests/golden" "$root/jitt/golden"
cp -r "$src/sim/fakes" "$root/jitt/fakes"
cp "$src/tests/run.sh" "$root/jitt/run.sh"
cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "== jitt hal on \$(uname -m), kernel \$(uname -r)"
/jitt/bin/jitt hal
# Every kernel we boot lets user space read the generic timer: the HAL must use it. Four
# emulated CPUs on the build machine's two make the 16-thread stress test crawl: shorter.
JITT_EXPECT_TIMER=cntvct JITT_STRESS_CYCLES=50 sh /jitt/run.sh --board "$name (qemu-system)" --bin /jitt/bin --fakes /jitt/fakes --golden /jitt/golden
echo "jitt-boot-test: done"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --owner root:root --quiet | gzip -1) >"$out/initramfs.cpio.gz"

# ---- boot ----
log=$out/console.log
echo "booting $(basename "$kernel") under ${qemu%% *}; console in $log"
timeout 900 $qemu -nographic -nic none -no-reboot -dtb "$out/virt-big-little.dtb" \
	-kernel "$kernel" -initrd "$out/initramfs.cpio.gz" \
	-append "console=$console panic=-1 quiet" </dev/null >"$log" 2>&1 || true
tr -d '\r' <"$log" >"$log.txt"
sed -n '/^== jitt hal/,/^jitt-boot-test: done/p' "$log.txt" | grep -v '^ok ' || true
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log.txt" | tail -n 1)
if [ -z "$line" ] || ! grep -q '^jitt-boot-test: done' "$log.txt"; then
	echo "qemu-boot: the board did not finish its tests; last lines of $log:" >&2
	tail -n 20 "$log.txt" >&2
	echo "$name-qemu-system 0 passed, 1 failed" >"$result"
	exit 1
fi
echo "$name-qemu-system $line" >"$result"
