# Development host: x86_64, musl through musl-gcc's specs.
ARCH          := x86_64
CROSS_COMPILE :=
CC            := musl-gcc
BOARD_CFLAGS  := -march=x86-64 -mtune=generic
# The SDK's clang flavour (libjitt-clang.a, agent/runtime/Kbuild): host only so far; the
# cross boards wait for lld to take the TLS relocation of the trace point's asm (aarch64)
# and for clang to read the thread pointer once a trace point (armv7): docs/oem.md,
# "Building with clang".
SDK_CLANG     := clang-14
# Programs run natively.
QEMU_USER     :=

# The most instructions the entry and the exit trace point may execute with tracing on
# (tests/count-trace-insns.sh in make bench, which also fails on a frame the plain function
# lacks): 9 and 9 since the rare paths' register-preserving stubs (before: 15 and 14, with
# a frame); 10 and 9 since the off path runs straight and the entry's on path jumps back
# to the body (ringbuf/trace_arch.h, RB_OFF; docs/ringbuf.md, "The off path laid out
# straight").
TRACE_INSNS_MAX := 10 9
# PIE: the entry takes one LEA more for the function's address (%rip-relative), which a
# fixed-address build stores as an immediate.
TRACE_INSNS_PIE_MAX := 11 9
# Sampled time (libjitt-sampled.a, ringbuf/trace_x86_64.h): an untimed record's path, PIE,
# the LEA included: cmp with due, two 4-byte stores and the jump back where a timed record
# has the limit compare, rdtsc and its store.
TRACE_INSNS_SAMPLED_MAX := 10 9
