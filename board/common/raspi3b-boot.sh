#!/bin/sh
# Boots a Raspberry Pi 3 Model B under qemu (-M raspi3b) with Debian's arm64 kernel and Debian's
# bcm2837-rpi-3-b device tree, and waits for INITRAMFS's /init to print MARKER on the console.
#
# usage: raspi3b-boot.sh OUT_DIR KERNEL_DIR INITRAMFS MARKER LOG
# KERNEL_DIR is Debian's linux-image-*-arm64 package unpacked (board/common/qemu-boot.sh).
# INITRAMFS is a gzip'd newc cpio. The board cannot power itself off (no PSCI in the Pi's device
# tree; the watchdog driver that resets it is a module, bcm2835_wdt.ko), so the end of a boot is
# the MARKER line, not qemu's exit. (An /init that insmods bcm2835_wdt.ko can `poweroff -f`: the
# watchdog resets the SoC and -no-reboot turns that into qemu's exit, which ends the wait too.)
# LOG gets the mini UART's output with the \r removed. It may hold a stray non-ASCII byte when
# the kernel configures the port (seen: 0xb2): read it with grep -a.
set -eu
out=$1 kdir=$2 initramfs=$3 marker=$4 log=$5
limit=900 # seconds; only a hang takes that long
mkdir -p "$out"

# ---- the kernel and its device tree (KERNEL_DIR: qemu-boot.sh unpacked it) ----
kernel=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
debian_dtb=$(ls "$kdir"/usr/lib/linux-image-*/broadcom/bcm2837-rpi-3-b.dtb | head -n 1)
# The kernel's random pool: with no seed from the boot loader and the SoC's RNG driver a
# module, getrandom() blocked for minutes under TCG (crng ready at 335 s), and with it
# jittd's install secret and every TLS handshake. A bootloader's /chosen/rng-seed (64 bytes
# from the build machine, fresh each boot) is what the kernel credits at boot.
dtb=$out/bcm2837-rpi-3-b-seeded.dtb
cp "$debian_dtb" "$dtb"
fdtput -t bx "$dtb" /chosen rng-seed $(od -An -tx1 -N64 /dev/urandom)

# ---- boot ----
# raspi3b is fixed at 4 Cortex-A53 cores and 1 GiB. qemu wires its first serial port to the
# PL011 (uart0, the Bluetooth one on a real Pi 3) and its second to the mini UART (uart1): the
# device tree's stdout-path is the mini UART, which the 8250 driver names ttyS1 (alias serial1).
# Plain "earlycon" follows stdout-path, so messages before the driver probes show too.
raw=$out/console.raw
rm -f "$raw" "$log"
: >"$raw"
echo "raspi3b-boot: booting $(basename "$kernel") on raspi3b; console in $log"
qemu-system-aarch64 -M raspi3b -display none -monitor none -nic none -no-reboot \
	-serial null -serial "file:$raw" \
	-dtb "$dtb" -kernel "$kernel" -initrd "$initramfs" \
	-append "console=ttyS1,115200 earlycon panic=-1" \
	</dev/null >"$out/qemu.err" 2>&1 &
qpid=$!

# Poll the console once a second: the marker ends the boot, as do qemu's exit, a kernel panic
# (nothing can reboot the board, it would sit there until the limit) and the time limit.
start=$(date +%s)
status=1
while :; do
	if tr -d '\r' <"$raw" | grep -aqxF -- "$marker"; then status=0; break; fi
	kill -0 "$qpid" 2>/dev/null || break
	grep -aq 'Kernel panic' "$raw" && break
	[ $(($(date +%s) - start)) -lt "$limit" ] ||
		{ echo "raspi3b-boot: no marker after $limit s" >&2; break; }
	sleep 1
done
kill "$qpid" 2>/dev/null || true
wait "$qpid" 2>/dev/null || true
tr -d '\r' <"$raw" >"$log"
if [ "$status" -ne 0 ]; then
	echo "raspi3b-boot: no '$marker' on the console; last lines of $log:" >&2
	grep -a 'Kernel panic' "$log" >&2 || true # scrolled away by the call trace otherwise
	tail -n 20 "$log" >&2
	[ -s "$out/qemu.err" ] && cat "$out/qemu.err" >&2
	exit 1
fi
echo "raspi3b-boot: marker seen after $(($(date +%s) - start)) s"
