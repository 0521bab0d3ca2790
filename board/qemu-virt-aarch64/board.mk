# qemu's "virt" machine with Cortex-A53 cores: the aarch64 board every test can boot.
ARCH          := aarch64
CROSS_COMPILE := aarch64-linux-gnu-
MUSL_SPECS    := /usr/lib/aarch64-linux-musl/musl-gcc.specs
BOARD_CFLAGS  := -mcpu=cortex-a53 -mtls-size=12
QEMU_USER     := qemu-aarch64-static -cpu cortex-a53

# Booting a real kernel (make boot-test): Debian's arm64 cloud kernel, busybox, our programs
# and tests in an initramfs. The device tree gets two LITTLE and two big cores
# (capacity-dmips-mhz), so the kernel itself reports big.LITTLE capacities.
QEMU_SYSTEM   := qemu-system-aarch64 -M virt -cpu cortex-a53 -smp 4 -m 512
KERNEL_PKG    := linux-image-cloud-arm64:arm64
BUSYBOX_PKG   := busybox-static:arm64
CONSOLE       := ttyAMA0

# The most instructions the entry and the exit trace point may execute with tracing on
# (tests/count-trace-insns.sh in make bench, which also fails on a frame the plain function
# lacks): 13 and 11, each with the clock-fallback test (before: 16 and 12, with a frame).
TRACE_INSNS_MAX := 13 11
