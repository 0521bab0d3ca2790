# Raspberry Pi 4: four Cortex-A72 cores, 64-bit userland.
ARCH          := aarch64
CROSS_COMPILE := aarch64-linux-gnu-
MUSL_SPECS    := /usr/lib/aarch64-linux-musl/musl-gcc.specs
BOARD_CFLAGS  := -mcpu=cortex-a72 -mtls-size=12
QEMU_USER     := qemu-aarch64-static -cpu cortex-a72
