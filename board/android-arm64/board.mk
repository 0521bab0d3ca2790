# A generic big.LITTLE phone: Cortex-A55 LITTLE cores with Cortex-A76 big cores (DynamIQ).
# gcc's combined tuning schedules for both clusters, since a thread may run on either.
ARCH          := aarch64
CROSS_COMPILE := aarch64-linux-gnu-
MUSL_SPECS    := /usr/lib/aarch64-linux-musl/musl-gcc.specs
BOARD_CFLAGS  := -mcpu=cortex-a76.cortex-a55 -mtls-size=12
QEMU_USER     := qemu-aarch64-static -cpu max

# The most instructions the entry and the exit trace point may execute with tracing on
# (tests/count-trace-insns.sh in make bench, which also fails on a frame the plain function
# lacks): 12 and 10, no clock-fallback test (defconfig; before: 16 and 12, with a frame).
TRACE_INSNS_MAX := 12 10

# make install (docs/oem.md): the vendor partition, Android init's .rc, an OEM AID.
PREFIX        ?= /vendor
INIT_SYSTEMS  := rc
JITT_USER     := vendor_jitt
