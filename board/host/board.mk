# Development host: x86_64, musl through musl-gcc's specs.
ARCH          := x86_64
CROSS_COMPILE :=
CC            := musl-gcc
BOARD_CFLAGS  := -march=x86-64 -mtune=generic
# Programs run natively.
QEMU_USER     :=
