# Raspberry Pi 4: four Cortex-A72 cores, 64-bit userland.
ARCH          := aarch64
CROSS_COMPILE := aarch64-linux-gnu-
MUSL_SPECS    := /usr/lib/aarch64-linux-musl/musl-gcc.specs
BOARD_CFLAGS  := -mcpu=cortex-a72 -mtls-size=12
QEMU_USER     := qemu-aarch64-static -cpu cortex-a72

# The most instructions the entry and the exit trace point may execute with tracing on
# (tests/count-trace-insns.sh in make bench, which also fails on a frame the plain function
# lacks): 12 and 10, no clock-fallback test (defconfig; before: 16 and 12, with a frame).
TRACE_INSNS_MAX := 12 10

# The Raspberry Pi 3 machine of qemu (board/common/raspi3b-boot.sh) boots this build: its
# image checks run there (make boot-test-raspi3b). BusyBox of the build's own architecture.
RASPI         := raspi3b
BUSYBOX_PKG   := busybox-static:arm64
