# Raspberry Pi 3 running a 32-bit armhf userland on its Cortex-A53 cores: the AArch32 path.
# -marm: Hubble's 32-bit trace point (MRRC + STRD) is ARM-state code; Thumb-2 works too but
# ARM state keeps the disassembly one-to-one with the paper.
ARCH          := armv7
CROSS_COMPILE := arm-linux-gnueabihf-
MUSL_SPECS    := /usr/lib/arm-linux-musleabihf/musl-gcc.specs
BOARD_CFLAGS  := -march=armv7-a -mtune=cortex-a53 -mfpu=neon-vfpv4 -mfloat-abi=hard -marm
# qemu-user does not implement the AArch32 generic timer registers (SIGILL): the HAL's probe
# falls back to clock_gettime there, which the tests exercise on purpose.
QEMU_USER     := qemu-arm-static -cpu cortex-a15

# Booting a real kernel (make boot-test): the same armhf programs on Debian's ARMv7 LPAE kernel
# under qemu-system-arm, where the kernel lets user space read CNTVCT: the HAL must pick the
# counter there, while under qemu-user it falls back.
QEMU_SYSTEM   := qemu-system-arm -M virt -cpu cortex-a15 -smp 4 -m 512
KERNEL_PKG    := linux-image-armmp-lpae:armhf
BUSYBOX_PKG   := busybox-static:armhf
CONSOLE       := ttyAMA0

# The most instructions the entry and the exit trace point may execute with tracing on
# (tests/count-trace-insns.sh in make bench, which also fails on a frame the plain function
# lacks): 17 and 13 (before: 19 and 14, with a frame).
TRACE_INSNS_MAX := 17 13

# The Raspberry Pi 3 machine of qemu (board/common/raspi3b-boot.sh) boots this build: its
# image checks run there (make boot-test-raspi3b). BusyBox of the build's own architecture.
RASPI         := raspi3b
