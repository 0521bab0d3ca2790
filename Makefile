# jitt - the one Makefile (non-recursive, Kbuild/BusyBox style).
#
#   make [BOARD=name] [O=dir] [V=1] [target]
#
# BOARD picks board/<name>/ (toolchain, CPU flags, defconfig); O puts every output under one
# folder (default build/<board>), so boards build side by side. Each source folder lists its
# objects in a Kbuild fragment included below; its options live in its own Kconfig.
# `make help` lists the targets.

BOARD ?= host
O ?= build/$(BOARD)
V ?= 0

srctree := $(CURDIR)
obj := $(abspath $(O))
BOARDS := $(sort $(patsubst board/%/board.mk,%,$(wildcard board/*/board.mk)))

ifeq ($(wildcard board/$(BOARD)/board.mk),)
$(error BOARD=$(BOARD) is not a board; the boards are: $(BOARDS))
endif
include board/$(BOARD)/board.mk

# ---- output style: one short line per step, the full commands with V=1 ----
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif
MAKEFLAGS += --no-print-directory

# ---- toolchain, from the board ----
ifneq ($(MUSL_SPECS),)
# musl's specs file switches the Debian cross gcc to musl's headers, crt files and libc.
# It is given once, in CC: a second -specs fails ("attempt to rename spec 'cpp_options'").
CC := $(CROSS_COMPILE)gcc -specs $(MUSL_SPECS)
endif
STRIP := $(CROSS_COMPILE)strip

CONFIG_H := $(obj)/include/generated/autoconf.h
# -flto: the trace hooks are inlined into every instrumented function (ringbuf/hooks.c).
# -fno-pie: every program is a static, fixed-address executable; function ids are then
# plain addresses (ringbuf/trace.h).
CFLAGS := -std=gnu11 -O2 -g -flto -fno-pie -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-ffunction-sections -fdata-sections $(BOARD_CFLAGS) \
	-I$(srctree) -include $(CONFIG_H) -MMD -MP
# --build-id: trace files name each module by it, so a stripped binary can be symbolised
# elsewhere (musl's specs file replaces the link line that would have added it).
LDFLAGS := -static -no-pie -flto=auto -Wl,--gc-sections -Wl,--build-id=sha1

# ---- dependencies: `make deps` installs them; any target that needs them runs it ----
DEPS_SCRIPT := board/common/deps.sh
ifneq ($(shell sh $(DEPS_SCRIPT) --check >/dev/null 2>&1 && echo ok),ok)
NEED_DEPS := deps
endif

.PHONY: all deps defconfig menuconfig savedefconfig run test check boot-test boot-image boot-test-raspi3b bench bench-real bench-peers size install \
	clean distclean help fuzz fuzz-short fuzz-long tsan dyn-check FORCE
.DEFAULT_GOAL := all

deps:
	$(Q)sh $(DEPS_SCRIPT)

# ---- configuration (kconfig-frontends) ----
# option env= in Kconfig reads these: per-architecture options appear only where they apply.
KCONFIG_ENV := srctree=$(srctree) JITT_ARCH=$(ARCH) JITT_BOARD=$(BOARD) KCONFIG_CONFIG=.config

defconfig: | $(NEED_DEPS)
	$(call say,CONFIG,$(O)/.config from board/$(BOARD)/defconfig)
	$(Q)mkdir -p $(obj)
	$(Q)cd $(obj) && $(KCONFIG_ENV) kconfig-conf -s --defconfig=$(srctree)/board/$(BOARD)/defconfig $(srctree)/Kconfig

# A build folder without a configuration starts from the board's defconfig.
$(obj)/.config: | $(NEED_DEPS)
	$(Q)$(MAKE) BOARD=$(BOARD) O=$(O) defconfig

menuconfig: $(obj)/.config
	$(Q)cd $(obj) && $(KCONFIG_ENV) kconfig-mconf $(srctree)/Kconfig

savedefconfig: $(obj)/.config
	$(Q)cd $(obj) && $(KCONFIG_ENV) kconfig-conf -s --savedefconfig=defconfig $(srctree)/Kconfig
	@echo "  wrote $(O)/defconfig: copy it to board/$(BOARD)/defconfig to keep it"

KCONFIGS := Kconfig $(wildcard */Kconfig */*/Kconfig)

# --olddefconfig gives options added since the .config was written their defaults (no
# questions asked, so it works without a terminal); --silentoldconfig then writes the header
# and include/config/, which it expects in the current folder.
$(CONFIG_H): $(obj)/.config $(KCONFIGS)
	$(call say,KCONFIG,$(O)/include/generated/autoconf.h)
	$(Q)mkdir -p $(obj)/include/config $(obj)/include/generated
	$(Q)cd $(obj) && $(KCONFIG_ENV) kconfig-conf -s --olddefconfig $(srctree)/Kconfig >/dev/null
	$(Q)cd $(obj) && $(KCONFIG_ENV) kconfig-conf -s --silentoldconfig $(srctree)/Kconfig
	$(Q)touch $@

# ---- mbedtls, from Debian's source package, built with this board's musl toolchain ----
include board/common/mbedtls.mk

# ---- what each folder builds ----
progs-y :=
include hal/Kbuild
include ringbuf/Kbuild
include uploader/Kbuild
include agent/Kbuild
include agent/analysis/Kbuild
include agent/cli/Kbuild
include agent/runtime/Kbuild
include agent/daemon/Kbuild
include sim/Kbuild
include tests/Kbuild

PROGS := $(addprefix $(obj)/bin/,$(progs-y))
SOURCE_DIRS := hal ringbuf agent uploader sim tests

all: $(PROGS)

# Objects depend on the flags they were built with (as Kbuild's .cmd files do): a change
# of compiler, CPU flags or options rebuilds everything.
FLAGS_STAMP := $(obj)/.build-flags
BUILD_FLAGS := $(CC) $(CFLAGS) $(LDFLAGS)
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@if [ "$$(cat $@ 2>/dev/null)" != '$(BUILD_FLAGS)' ]; then echo '$(BUILD_FLAGS)' >$@; fi

$(obj)/%.o: %.c $(CONFIG_H) $(FLAGS_STAMP)
	$(call say,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(CFLAGS_$*.o) -c $< -o $@

# One link rule per program: $(name)-objs are its objects, $(name)-libs its libraries,
# $(name)-ldflags its own link flags (libjitt's wrap flags, for instance).
# The link map is kept: tests/check-static.sh reads it to prove no glibc object got in.
define link_program
$(obj)/bin/$(1): $(addprefix $(obj)/,$($(1)-objs)) $($(1)-libs)
	$$(call say,LD,$(O)/bin/$(1))
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(LDFLAGS) $($(1)-ldflags) -Wl,-Map=$$@.map -o $$@ \
		$$(filter %.o,$$^) $($(1)-libs)
endef
$(foreach p,$(progs-y),$(eval $(call link_program,$(p))))

FORCE:

-include $(patsubst %.o,$(obj)/%.d,$(sort $(foreach p,$(progs-y),$($(p)-objs))))

# ---- running ----
# `run`: the story, end to end (sim/demo.sh): jittd, the sim app, a jank, its summary; then
# the upload to the reference collector, which is built on the host board only
# ($(COLLECTOR), uploader/collector/Kbuild): elsewhere demo.sh says it skips that half.
run: $(obj)/bin/jitt $(obj)/bin/jittd $(obj)/bin/jank-sim $(COLLECTOR)
	$(Q)sh sim/demo.sh $(obj)/bin "$(QEMU_USER)"

# `check`: this board's tests, natively or under its qemu-user.
# The FAIL lines go into the result file too, for the total at the end of make test.
check: all
	$(Q){ sh tests/run.sh --board $(BOARD) --bin $(obj)/bin --result $(obj)/test-result \
		--static-check $(if $(QEMU_USER),--qemu "$(QEMU_USER)"); echo $$? >$(obj)/test-status; } \
		2>&1 | tee $(obj)/test-log; \
	grep -m 20 -E '^ *FAIL' $(obj)/test-log >>$(obj)/test-result; exit $$(cat $(obj)/test-status)

# `test`: the host's tests, then the same tests cross-built and run under qemu-user for
# aarch64 and armv7, then inside those boards booted under qemu-system with the installed
# image (and its checks), the rpi builds' image on a Raspberry Pi 3 machine, then a short fuzz
# run and the ring tests under ThreadSanitizer, then one total line. A part that fails does
# not stop the others: the total says what failed.
TEST_BOARDS ?= host qemu-virt-aarch64 rpi3-armv7
BOOT_BOARDS ?= qemu-virt-aarch64 rpi3-armv7
RASPI_BOARDS ?= rpi4 rpi3-armv7
TEST_RESULTS := $(foreach b,$(TEST_BOARDS),build/$(b)/test-result) \
	$(foreach b,$(BOOT_BOARDS),build/$(b)/boot-result build/$(b)/image-result) \
	$(foreach b,$(RASPI_BOARDS),build/$(b)/raspi3b-result) build/host/fuzz-result \
	build/host/tsan-result build/host/dyn-result
test:
	$(Q)rm -f $(TEST_RESULTS); \
	for b in $(TEST_BOARDS); do $(MAKE) BOARD=$$b O=build/$$b check; done; \
	for b in $(BOOT_BOARDS); do $(MAKE) BOARD=$$b O=build/$$b boot-test; done; \
	for b in $(RASPI_BOARDS); do $(MAKE) BOARD=$$b O=build/$$b boot-test-raspi3b; done; \
	$(MAKE) BOARD=host O=build/host fuzz-short; \
	$(MAKE) BOARD=host O=build/host tsan; \
	$(MAKE) BOARD=host O=build/host dyn-check; \
	sh tests/total.sh $(TEST_RESULTS)

# ---- fuzzing (host only): libFuzzer with ASan and UBSan, built by clang against the
# host's libc; a test tool, never shipped. One target per tests/fuzz_<name>.c, each its own
# program $(O)/fuzz/fuzz-<name>, seeded from its folders under tests/fuzz-corpus/ (real traces
# of every sim scenario, made by tests/fuzz-seed.sh). `make fuzz` (also `fuzz-short`, the name
# make test uses) runs each for FUZZ_SHORT seconds; `make fuzz-long` for FUZZ_TIME seconds.
# Targets run one after another: the fuzzers are single-threaded, and the machines this
# runs on share their cores. tests/fuzz-run.sh runs them and says what each found. ----
FUZZ_TIME ?= 600
FUZZ_SHORT ?= 15
FUZZ_TIMEOUT ?= 10
FUZZ_RSS_MB ?= 2048
# The summary target's promises (tests/fuzz_summary.c): the JSON within 4 KiB and no control
# byte in the text, for every input. 0 turns a check off, to fuzz past a known failure.
FUZZ_STRICT_4K ?= 1
FUZZ_STRICT_TEXT ?= 1
FUZZ_TARGETS := tracefile summary export diff config ctl http report state
# What the traced code needs, from the folders' Kbuild lists, so a new file there is linked.
FUZZ_LIB := $(patsubst %.o,%.c,$(hal-y) $(rb-y) $(agent-common-y) $(analysis-y) $(uploader-core-y))
FUZZ_SRCS_tracefile := tests/fuzz_tracefile.c $(FUZZ_LIB)
FUZZ_SRCS_summary := tests/fuzz_summary.c tests/fuzz_common.c $(FUZZ_LIB)
FUZZ_SRCS_export := tests/fuzz_export.c tests/fuzz_common.c $(FUZZ_LIB)
FUZZ_SRCS_diff := tests/fuzz_diff.c tests/fuzz_common.c $(FUZZ_LIB)
FUZZ_SRCS_config := tests/fuzz_config.c tests/fuzz_common.c $(FUZZ_LIB)
FUZZ_SRCS_ctl := tests/fuzz_ctl.c agent/ctl.c agent/escape.c
FUZZ_SRCS_http := tests/fuzz_http.c uploader/http.c
FUZZ_SRCS_state := tests/fuzz_state.c uploader/state.c uploader/queue.c hal/fs.c
FUZZ_SRCS_report := tests/fuzz_report.c tests/fuzz_common.c $(FUZZ_LIB)
FUZZ_TRACES := tests/fuzz-corpus/tracefile tests/fuzz-corpus/traces tests/fuzz-corpus/crafted
FUZZ_SEEDS_tracefile := $(FUZZ_TRACES)
FUZZ_SEEDS_summary := $(FUZZ_TRACES)
FUZZ_SEEDS_export := $(FUZZ_TRACES)
FUZZ_SEEDS_diff := tests/fuzz-corpus/diff
FUZZ_SEEDS_config := tests/fuzz-corpus/config
FUZZ_SEEDS_ctl := tests/fuzz-corpus/ctl
FUZZ_SEEDS_http := tests/fuzz-corpus/http
FUZZ_SEEDS_state := tests/fuzz-corpus/state
FUZZ_SEEDS_report := tests/fuzz-corpus/report
# Dictionaries, tests/fuzz-corpus/<name>.dict (the target's own name when not given here).
FUZZ_DICT_summary := tracefile
FUZZ_DICT_export := tracefile
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I$(srctree) -include $(CONFIG_H)
FUZZERS := $(addprefix $(obj)/fuzz/fuzz-,$(FUZZ_TARGETS))
FUZZ_OBJS := $(sort $(foreach t,$(FUZZ_TARGETS),$(FUZZ_SRCS_$(t):%.c=$(obj)/fuzz/obj/%.o)))

$(obj)/fuzz/obj/%.o: %.c $(CONFIG_H)
	$(call say,FUZZCC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)clang-14 $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

define fuzz_program
$(obj)/fuzz/fuzz-$(1): $(FUZZ_SRCS_$(1):%.c=$(obj)/fuzz/obj/%.o)
	$$(call say,FUZZLD,$(O)/fuzz/fuzz-$(1))
	$$(Q)clang-14 $$(FUZZ_CFLAGS) $$^ -o $$@ -lpthread -lm
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_program,$(t))))
-include $(FUZZ_OBJS:.o=.d)

# Each target runs from a copy of its committed seeds, so new corpus entries stay in
# $(O)/fuzz/<name>/; so do crash, leak and timeout inputs, with the command that replays
# them. The result line counts one test per target in make test's total.
# $(call fuzz_run,SECONDS,RESULT_FILE)
fuzz_run = FUZZ_STRICT_4K=$(FUZZ_STRICT_4K) FUZZ_STRICT_TEXT=$(FUZZ_STRICT_TEXT) \
	sh tests/fuzz-run.sh --dir $(obj)/fuzz --time $(1) --timeout $(FUZZ_TIMEOUT) \
	--rss-mb $(FUZZ_RSS_MB) --dicts tests/fuzz-corpus --result $(2) \
	$(foreach t,$(FUZZ_TARGETS),"$(t):$(FUZZ_SEEDS_$(t)):$(or $(FUZZ_DICT_$(t)),$(t))")
fuzz fuzz-short: $(FUZZERS)
	$(Q)rm -f $(obj)/fuzz-result
	$(Q)$(call fuzz_run,$(FUZZ_SHORT),$(obj)/fuzz-result)
fuzz-long: $(FUZZERS)
	$(Q)rm -f $(obj)/fuzz-long-result
	$(Q)$(call fuzz_run,$(FUZZ_TIME),$(obj)/fuzz-long-result)

# ---- ThreadSanitizer (host only): the ring tests built by gcc against the host's libc
# with -fsanitize=thread; a test tool, never shipped. Part of make test. ----
TSAN_SRCS := tests/harness.c tests/test_ring.c tests/test_decode.c tests/test_timer.c \
	tests/untraced.c $(patsubst %.o,%.c,$(hal-y) $(rb-y) $(rb-hooks-y))
TSAN := $(obj)/tsan/unit-tests-tsan
$(TSAN): $(TSAN_SRCS) tests/traced.c $(wildcard ringbuf/*.h hal/*.h tests/*.h) $(CONFIG_H)
	$(call say,TSANCC,$(O)/tsan/unit-tests-tsan)
	$(Q)mkdir -p $(dir $@)
	$(Q)gcc -std=gnu11 -g -O1 -fsanitize=thread -fPIE -pie -I$(srctree) -include $(CONFIG_H) \
		-finstrument-functions -c tests/traced.c -o $(obj)/tsan/traced.o
	$(Q)gcc -std=gnu11 -g -O1 -fsanitize=thread -fPIE -pie -I$(srctree) -include $(CONFIG_H) \
		$(TSAN_SRCS) $(obj)/tsan/traced.o -o $@ -lpthread

# ThreadSanitizer needs a fixed address-space layout on some kernels: setarch -R.
tsan: $(TSAN)
	$(Q)rm -f $(obj)/tsan-result; \
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
		setarch -R $(TSAN) ring decode timer >$(obj)/tsan/log 2>&1; status=$$?; \
	grep -E '^(ok|FAIL)|WARNING: ThreadSanitizer' $(obj)/tsan/log | sed 's/^/  tsan: /'; \
	if [ $$status -eq 0 ]; then r="1 passed, 0 failed"; \
	else tail -n 60 $(obj)/tsan/log; r="0 passed, 1 failed"; fi; \
	{ echo "tsan $$r"; [ $$status -eq 0 ] || grep -m 12 -E '^FAIL|^    [a-z/_]+\.c:[0-9]+: |died of|SUMMARY: ' \
		$(obj)/tsan/log; } >$(obj)/tsan-result; [ $$status -eq 0 ]

# ---- a dynamically linked program (host only): PIE, glibc, an instrumented shared
# library; libjitt must support OEM services built that way too. Part of make test. ----
DYN := $(obj)/dyn/dyn-main
DYN_SRCS := tests/dyn_main.c $(patsubst %.o,%.c,$(hal-y) $(rb-y) $(rb-hooks-y))
$(DYN): $(DYN_SRCS) tests/dyn_lib.c tests/dyn_work.c ringbuf/hooks_dso.c $(wildcard ringbuf/*.h hal/*.h) $(CONFIG_H)
	$(call say,DYNCC,$(O)/dyn/dyn-main)
	$(Q)mkdir -p $(dir $@)
	$(Q)gcc -std=gnu11 -O2 -flto -fPIC -shared -finstrument-functions -I$(srctree) \
		-include $(CONFIG_H) tests/dyn_lib.c ringbuf/hooks_dso.c -o $(obj)/dyn/libdyntraced.so
	$(Q)gcc -std=gnu11 -O2 -flto -fPIE -finstrument-functions -I$(srctree) \
		-include $(CONFIG_H) -c tests/dyn_work.c -o $(obj)/dyn/dyn_work.o
	$(Q)gcc -std=gnu11 -O2 -flto -Wall -Werror -fPIE -pie -rdynamic -Wl,--build-id=sha1 -I$(srctree) \
		-include $(CONFIG_H) $(DYN_SRCS) $(obj)/dyn/dyn_work.o -o $@ -L$(obj)/dyn -ldyntraced \
		-Wl,-rpath,'$$ORIGIN' -lpthread -ldl

dyn-check: $(DYN)
	$(Q)mkdir -p $(obj)/dyn/spool; $(DYN) $(obj)/dyn/spool >$(obj)/dyn/log 2>&1; \
	status=$$?; cat $(obj)/dyn/log; \
	echo "dynamic $$(tail -n 1 $(obj)/dyn/log)" >$(obj)/dyn-result; [ $$status -eq 0 ]

# Benchmarks print their figures (medians and ratios measured side by side in one run);
# targets live here, never in timed tests.
# `boot-test`: boot this board's kernel under qemu-system (boards that set QEMU_SYSTEM) with
# the image `make install` lays out, and run the same tests and the image's checks inside it
# (board/common/qemu-boot.sh). `boot-test-raspi3b`: the image's checks on a Raspberry Pi 3
# machine, for the boards that set RASPI (the rpi builds).
BOOT_IMAGE := $(obj)/boot-image
GUEST_COLLECTOR := $(obj)/guest/collector
boot-image: all
	$(Q)rm -rf $(BOOT_IMAGE)
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(abspath $(BOOT_IMAGE)) >/dev/null
boot-test: boot-image $(GUEST_COLLECTOR)
ifeq ($(QEMU_SYSTEM),)
	@echo "boot-test: board $(BOARD) has no qemu-system setup (QEMU_SYSTEM in board.mk)"; exit 1
else
	$(call say,BOOT,$(BOARD) under $(firstword $(QEMU_SYSTEM)))
	$(Q)sh board/common/qemu-boot.sh virt $(BOARD) $(obj)/boot $(DL_DIR) $(obj)/bin \
		$(BOOT_IMAGE) $(GUEST_COLLECTOR) $(obj)/boot-result $(obj)/image-result \
		$(BUSYBOX_PKG) "$(QEMU_SYSTEM)" $(KERNEL_PKG) $(CONSOLE)
endif
boot-test-raspi3b: boot-image $(GUEST_COLLECTOR)
ifeq ($(RASPI),)
	@echo "boot-test-raspi3b: board $(BOARD) is not a Raspberry Pi build (RASPI in board.mk)"; exit 1
else
	$(call say,BOOT,$(BOARD) on $(RASPI))
	$(Q)sh board/common/qemu-boot.sh $(RASPI) $(BOARD) $(obj)/raspi3b $(DL_DIR) $(obj)/bin \
		$(BOOT_IMAGE) $(GUEST_COLLECTOR) - $(obj)/raspi3b-result $(BUSYBOX_PKG)
endif

# The trace point's instructions are counted in this board's build and in the aarch64 (with
# and without the clock-fallback test) and armv7 ones (tests/count-trace-insns.sh), each
# against its board's TRACE_INSNS_MAX (board.mk), and in a PIE program linked with the
# SDK's glibc archive against TRACE_INSNS_PIE_MAX (TRACE_INSNS_MAX where not set), and with
# its clang one where the board builds it (SDK_CLANG), and with sampled time (x86_64:
# TRACE_INSNS_SAMPLED_MAX, an untimed record's path); callgrind counts them on Listing 1 on
# the host, at most CALLGRIND_MAX_PER_POINT per trace point. Either over its pin fails make
# bench.
INSN_BOARDS ?= $(sort $(BOARD) qemu-virt-aarch64 rpi3-armv7 rpi4)
CALLGRIND_MAX_PER_POINT ?= 14
# A measurement on real programs, not a test (docs/bench-real.md): SQLite's speedtest1's
# summaries and reports (docs/report-format.md) and its overhead with `jitt exclude`
# (docs/exclude.md), then the call-heavy cost of duktape, memcached and speedtest1 (file and
# --memdb), one table each, and duktape's instrumented-off cost over several layouts of its
# code (tests/bench-layouts.sh). Host only; it fetches Debian's source packages. REPS, QUICK=1.
bench-real: $(obj)/bin/jitt all
	$(Q)sh tests/speedtest1.sh $(obj)/bin
	$(Q)echo; sh tests/bench-real-programs.sh . $(obj)/bin
	$(Q)sh tests/bench-layouts.sh . $(obj)/bin

# jitt against uftrace (-pg and -finstrument-functions) and LLVM XRay's FDR mode on
# Listing 1 and the sim app's UI frame, interleaved, and their post-processing tools (tests/bench-peers.sh,
# docs/peers.md). A measurement, not a test; host only. Installs the peers if missing.
bench-peers: $(obj)/bin/peers-jitt $(obj)/bin/jitt
ifneq ($(BOARD),host)
	@echo "bench-peers: host only (uftrace and XRay trace the build machine's programs)"; exit 1
else
	$(Q)sh tests/bench-peers.sh $(obj)/bin
endif

bench: $(obj)/bin/bench-timer $(obj)/bin/bench-trace $(obj)/bin/bench-sched $(obj)/bin/bench-summary $(obj)/bin/jitt \
	$(obj)/bin/bench-freeze $(obj)/bin/jittd $(obj)/bin/jank-sim $(obj)/bin/jank-sim-plain \
	$(obj)/bin/up-post all
	$(Q)$(QEMU_USER) $(obj)/bin/bench-timer
	$(Q)$(QEMU_USER) $(obj)/bin/bench-trace
	$(Q)echo; $(if $(QEMU_USER),echo "bench-sched: host only (qemu-user has no perf_event_open)",$(obj)/bin/bench-sched)
	$(Q)echo; $(if $(QEMU_USER),echo "bench-summary: host only",$(obj)/bin/bench-summary $(obj)/bin/jitt)
	$(Q)echo; $(if $(QEMU_USER),echo "bench-freeze: host only",$(obj)/bin/bench-freeze $(obj)/bench-freeze)
	$(Q)echo; $(if $(QEMU_USER),echo "bench-jittd: host only",sh tests/bench-jittd.sh $(obj)/bin)
	$(Q)echo; $(if $(QEMU_USER),echo "bench-sim: host only",sh tests/bench_sim.sh $(obj)/bin)
	$(Q)echo; $(if $(QEMU_USER),echo "callgrind: host only",sh tests/callgrind-trace.sh $(obj)/bin/bench-trace $(CALLGRIND_MAX_PER_POINT))
	$(Q)echo; $(if $(QEMU_USER),echo "bench-upload: host only",sh tests/bench-upload.sh $(obj)/bin)
	$(Q)echo; $(if $(QEMU_USER),echo "bench-sleds: host only",sh tests/bench-sleds.sh . $(obj)/bin)
	$(Q)fail=0; for b in $(INSN_BOARDS); do \
		$(MAKE) BOARD=$$b O=build/$$b all >/dev/null || exit 1; \
		prefix=$$(sed -n 's/^CROSS_COMPILE *:= *//p' board/$$b/board.mk); \
		max=$$(sed -n 's/^TRACE_INSNS_MAX *:= *//p' board/$$b/board.mk); \
		out=$$(sh tests/count-trace-insns.sh build/$$b/bin/unit-tests $${prefix}objdump $$max) \
			|| { fail=1; echo; echo "$$out"; continue; }; \
		echo; echo "$$b: $$out" | sed 4q; \
		pmax=$$(sed -n 's/^TRACE_INSNS_PIE_MAX *:= *//p' board/$$b/board.mk); \
		out=$$(sh tests/count-trace-insns.sh build/$$b/sdk-test/trace-insns-pie \
			$${prefix}objdump $${pmax:-$$max}) || { fail=1; echo; echo "$$out"; continue; }; \
		echo "$$b, PIE with the SDK's glibc libjitt: $$out" | sed 4q; \
		[ -x build/$$b/sdk-test/trace-insns-clang ] || continue; \
		out=$$(sh tests/count-trace-insns.sh build/$$b/sdk-test/trace-insns-clang \
			$${prefix}objdump $${pmax:-$$max}) || { fail=1; echo; echo "$$out"; continue; }; \
		echo "$$b, PIE with the SDK's clang libjitt: $$out" | sed 4q; \
		[ -x build/$$b/sdk-test/trace-insns-sampled ] || continue; \
		smax=$$(sed -n 's/^TRACE_INSNS_SAMPLED_MAX *:= *//p' board/$$b/board.mk); \
		out=$$(sh tests/count-trace-insns.sh build/$$b/sdk-test/trace-insns-sampled \
			$${prefix}objdump $${smax:-$$max}) || { fail=1; echo; echo "$$out"; continue; }; \
		echo "$$b, PIE with sampled time (an untimed record): $$out" | sed 4q; \
	done; [ $$fail -eq 0 ]

# Stripped sizes of every board's programs, built if needed.
SIZE_BOARDS ?= $(BOARDS)
size:
	$(Q)for b in $(SIZE_BOARDS); do $(MAKE) BOARD=$$b O=build/$$b all || exit 1; done
	$(Q)sh tests/sizes.sh $(foreach b,$(SIZE_BOARDS),$(b)=build/$(b)/bin)
	$(Q)sh tests/size-target.sh build/qemu-virt-aarch64/bin/jittd aarch64-linux-gnu-strip 614400

# `install`: programs, the settings file, the SDK and the board's init files under
# DESTDIR (board/common/install.sh; what goes where: docs/oem.md). A board's INIT_SYSTEMS
# (board.mk) picks its init files from board/common/init/layout; JITT_USER and JITT_GROUP
# are the user jittd runs as.
DESTDIR ?=
PREFIX ?= /usr
INIT_SYSTEMS ?= systemd sysv
JITT_USER ?= jitt
JITT_GROUP ?= $(JITT_USER)
install: all
	$(Q)sh board/common/install.sh $(obj) $(BOARD) "$(DESTDIR)" $(PREFIX) "$(CC)" $(STRIP) \
		"$(INIT_SYSTEMS)" $(JITT_USER) $(JITT_GROUP) "$(SDK_CC_glibc)" "$(SDK_CLANG)"

clean:
	$(call say,CLEAN,$(O))
	$(Q)rm -rf $(obj)/bin $(obj)/boot $(obj)/guest $(addprefix $(obj)/,$(SOURCE_DIRS)) $(obj)/*-result

distclean:
	$(call say,CLEAN,build/)
	$(Q)rm -rf build

help:
	@echo "make [BOARD=name] [O=dir] [V=1] target"
	@echo "  all (default)  build $(BOARD)'s programs into $(O)/bin"
	@echo "  run            the demo: jittd, the sim app, a jank, its summary (sim/demo.sh)"
	@echo "  test           tests on the host, under qemu-user and in qemu-system boards"
	@echo "  check          this board's tests only"
	@echo "  boot-test      this board's tests and its installed image inside its kernel under qemu-system"
	@echo "  boot-test-raspi3b  the installed image's checks on qemu's raspi3b (BOARD=rpi4, rpi3-armv7)"
	@echo "  bench          benchmarks"
	@echo "  bench-real     SQLite's speedtest1 (summaries, reports, overhead with jitt exclude),"
	@echo "                 the call-heavy cost of duktape, memcached and speedtest1 (file and"
	@echo "                 --memdb): plain, off, traced, traced with a list, perf against the"
	@echo "                 summary (REPS=5, QUICK=1: 2 rounds, smaller workloads)"
	@echo "  bench-peers    jitt against uftrace and LLVM XRay on Listing 1 and the sim app's"
	@echo "                 UI frame (host only)"
	@echo "  fuzz           every fuzz target briefly (FUZZ_SHORT=15 s each): traces, summaries,"
	@echo "                 exports, diff, settings, control requests,"
	@echo "                 the uploader's HTTP answers"
	@echo "  fuzz-long      every fuzz target for FUZZ_TIME=600 s each, one after another;"
	@echo "                 per target: runs, coverage, corpus, what it found"
	@echo "  tsan           the ring tests under ThreadSanitizer"
	@echo "  size           stripped program sizes of every board"
	@echo "  defconfig      load board/$(BOARD)/defconfig into $(O)/.config"
	@echo "  menuconfig     edit $(O)/.config"
	@echo "  savedefconfig  write the minimal $(O)/defconfig"
	@echo "  install        DESTDIR=... PREFIX=/usr: jitt, jittd, /etc/jitt.conf, the SDK"
	@echo "                 (libjitt), the board's init files (docs/oem.md)"
	@echo "  guest-collector"
	@echo "                 the reference collector for $(BOARD), static musl, into"
	@echo "                 $(O)/guest/collector: a booted guest runs it on its loopback"
	@echo "  deps           install the toolchains, qemu and kconfig (as root)"
	@echo "  clean          remove $(O)'s objects and programs (keeps .config and mbedtls)"
	@echo "  distclean      remove build/"
	@echo "boards: $(BOARDS)"
	@echo "sources: hal/ ringbuf/ agent/ (shared) agent/analysis/ agent/cli/ agent/runtime/"
	@echo "         agent/daemon/ sim/ tests/; each folder's Kbuild lists its objects"
