# qemu's "virt" machine with Cortex-A53 cores: the aarch64 board every test can boot.
ARCH          := aarch64
CROSS_COMPILE := aarch64-linux-gnu-
MUSL_SPECS    := /usr/lib/aarch64-linux-musl/musl-gcc.specs
BOARD_CFLAGS  := -mcpu=cortex-a53
QEMU_USER     := qemu-aarch64-static -cpu cortex-a53
