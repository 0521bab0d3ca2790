#!/bin/sh
# Tries raspi3b-boot.sh: a small initramfs with Debian's static busybox and `jitt` of both
# Raspberry Pi builds (aarch64, and armv7 as jitt32, run in the arm64 kernel's 32-bit mode).
#
# usage: raspi3b-try.sh [OUT_DIR [DL_DIR]]   (defaults: build/raspi3b, build/dl)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build/raspi3b} dl=${2:-$src/build/dl}
marker="jitt-raspi3b: done"
mkdir -p "$out" "$dl"

for b in rpi4 rpi3-armv7; do
	[ -x "$src/build/$b/bin/jitt" ] || make -C "$src" BOARD=$b O=build/$b
done

deb=$(ls "$dl"/busybox-static_*_arm64.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ]; then
	(cd "$dl" && apt-get download busybox-static:arm64 >/dev/null 2>&1)
	deb=$(ls "$dl"/busybox-static_*_arm64.deb | head -n 1)
fi
rm -rf "$out/busybox" "$out/root"
dpkg-deb -x "$deb" "$out/busybox"
root=$out/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
cp "$out/busybox/bin/busybox" "$root/bin/busybox"
cp "$src/build/rpi4/bin/jitt" "$root/bin/jitt"
cp "$src/build/rpi3-armv7/bin/jitt" "$root/bin/jitt32"
# The marker is assembled at run time: the script's text never holds it whole.
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "== uname"; uname -a
echo "== cpuinfo"; head -n 20 /proc/cpuinfo; grep -c ^processor /proc/cpuinfo
echo "== jitt hal (aarch64)"; jitt hal; echo "exit $?"
echo "== jitt32 hal (armv7)"; jitt32 hal; echo "exit $?"
echo "== affinity"; grep Cpus_allowed_list /proc/self/status
echo "== memory"; grep -E 'MemTotal|MemFree' /proc/meminfo
echo "== consoles"; cat /proc/consoles
done=done; echo "jitt-raspi3b: $done"
while :; do sleep 3600; done
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --owner root:root --quiet | gzip -9) >"$out/initramfs.cpio.gz"
ls -l "$out/initramfs.cpio.gz"
sh "$src/board/common/raspi3b-boot.sh" "$out" "$dl" "$out/initramfs.cpio.gz" "$marker" "$out/console.log"
