#!/bin/sh
# The installed SDK as an OEM's build systems use it (docs/oem.md, "Building an app with
# jitt"): `make install` into a folder, then two small projects built by the build machine's
# own gcc, PIE as Debian's gcc builds by default, on glibc, dynamically linked:
#  - a make project through pkg-config (jitt.pc for the service, jitt-dso.pc for its shared
#    library, nothing for its tool);
#  - the same sources as a CMake project through find_package(jitt) (jitt::jitt, jitt::dso).
# Each service traces its main thread, spends its time in a function of its own and in one
# of the library's, and asks for a trace; `jitt summarize` must name both (the library's by
# its module), and the tool must not be instrumented (no trace hooks in it).
# Also: a musl static program through jitt-musl.pc; and, where the SDK has the clang flavour
# (jitt-clang.pc), a PIE glibc program built by clang and linked by lld: no call to a hook
# left, no trace point in the function clang inlined, and its trace names what it kept;
# and, on x86_64, a PIE program through jitt-sampled.pc (sampled time): its calls counted,
# its times estimated where the records have none.
# usage: sdk-check.sh SRCTREE BIN_DIR   (host)
set -u
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$src/tests/check-lib.sh"

dest=$work/image
if ! make -C "$src" --no-print-directory install DESTDIR="$dest" O="$bin/.." >"$work/install.log" 2>&1
then
	fail "make install" "$(tail -n 5 "$work/install.log")"
	echo "$passed passed, $failed failed"
	exit 1
fi
PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
export PKG_CONFIG_PATH
pc() { pkg-config --define-prefix "$@"; }

# ---- the sources: a service, its library, its tool ----
mkdir -p "$work/src"
cp "$src/tests/wait_trace.h" "$work/src/" # wait_for_trace()
cat >"$work/src/service.c" <<'C'
#include <jitt/jitt.h>
#include <stdio.h>
#include <unistd.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include "wait_trace.h"
int lib_work(int n); /* libwork.so */
__attribute__((noinline)) static int service_own_work(int x)
{
	for (volatile int i = 0; i < 4000000; i++)
		x += i & 1;
	return x;
}
__attribute__((noinline)) static int service_request(int x)
{
	return service_own_work(x) + lib_work(x);
}
int main(void)
{
	jitt_thread_name("svc-main");
	int traced = jitt_trace_thread(true);
	int x = service_request(1);
	int a = jitt_anomaly("sdk check");
	wait_for_trace();
	printf("traced %d anomaly %d work %d\n", traced, a, x > 0);
	return 0;
}
C
cat >"$work/src/work.c" <<'C'
__attribute__((noinline)) static int lib_inner(int x)
{
	for (volatile int i = 0; i < 4000000; i++)
		x += i & 1;
	return x;
}
int lib_work(int n)
{
	return lib_inner(n);
}
C
cat >"$work/src/tool.c" <<'C'
#include <stdio.h>
__attribute__((noinline)) static int tool_sum(int n) { return n * (n + 1) / 2; }
int main(void) { printf("%d\n", tool_sum(10)); return 0; }
C

# ---- a make project ----
mkdir -p "$work/make"
cp "$work/src/"*.[ch] "$work/make/"
cat >"$work/make/Makefile" <<'MK'
# Only the service is traced: jitt's flags go on its own objects, not on CFLAGS.
CC := $(shell pkg-config --define-prefix --variable=compiler jitt)
JITT_CFLAGS := $(shell pkg-config --define-prefix --cflags jitt)
JITT_LIBS := $(shell pkg-config --define-prefix --libs jitt)
DSO_CFLAGS := $(shell pkg-config --define-prefix --cflags jitt-dso)
DSO_LIBS := $(shell pkg-config --define-prefix --libs jitt-dso)
CFLAGS := -O2 -g
all: service tool
service: service.o libwork.so
	$(CC) $(CFLAGS) service.o -o $@ -L. -lwork -Wl,-rpath,'$$ORIGIN' $(JITT_LIBS)
service.o: service.c
	$(CC) $(CFLAGS) $(JITT_CFLAGS) -c $< -o $@
libwork.so: work.c
	$(CC) $(CFLAGS) -fPIC -shared $(DSO_CFLAGS) $< -o $@ $(DSO_LIBS)
tool: tool.c
	$(CC) $(CFLAGS) $< -o $@
MK

# ---- the same as a CMake project ----
mkdir -p "$work/cmake"
cp "$work/src/"*.[ch] "$work/cmake/"
cat >"$work/cmake/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.13)
project(sdkcheck C)
find_package(jitt 0.6 REQUIRED)
add_library(work SHARED work.c)
target_link_libraries(work PRIVATE jitt::dso)
add_executable(service service.c)
target_link_libraries(service PRIVATE jitt::jitt work)
add_executable(tool tool.c)
CM

conf=$work/jitt.conf
mkdir -p "$work/data/spool" "$work/run"
printf 'data_dir = %s\nrun_dir = %s\n' "$work/data" "$work/run" >"$conf"

# run_service NAME DIR: runs DIR/service, checks what it traced
run_service() {
	name=$1 dir=$2
	rm -f "$work/data/spool/"*
	if file -L "$dir/service" | grep -q 'pie executable'; then
		ok "$name: the service is a PIE program"
	else
		fail "$name: the service is not PIE" "$(file -L "$dir/service")"
	fi
	out=$(cd "$dir" && TRACE_SPOOL=$work/data/spool JITT_CONFIG=$conf ./service 2>"$work/$name.err")
	if [ "$out" = "traced 0 anomaly 0 work 1" ]; then
		ok "$name: the service traces its main thread and asks for a trace"
	else
		fail "$name: the service said '$out'" "$(cat "$work/$name.err")"
	fi
	trace=$(ls "$work/data/spool/"*.jtr 2>/dev/null | head -n 1)
	if [ -z "$trace" ]; then
		fail "$name: no trace persisted" "$(cat "$work/$name.err")"
		return
	fi
	"$bin/jitt" summarize "$trace" >"$work/$name.sum" 2>&1
	check "$name: the summary names the service's own function" \
		grep -q ' service_own_work$' "$work/$name.sum"
	if grep -q 'lib_inner' "$work/$name.sum"; then
		ok "$name: the summary names the shared library's function"
	else
		fail "$name: the shared library's function is not named" "$(grep -A6 'top self' "$work/$name.sum")"
	fi
	check "$name: the tool has no trace hooks" \
		sh -c "! nm '$dir/tool' | grep -q __cyg_profile"
}

if make -C "$work/make" >"$work/make.log" 2>&1; then
	ok "make project: built with pkg-config jitt, jitt-dso ($(pc --variable=compiler jitt))"
	run_service make "$work/make"
else
	fail "make project: build failed" "$(tail -n 8 "$work/make.log")"
fi

if cmake -S "$work/cmake" -B "$work/cmake/build" -DCMAKE_PREFIX_PATH="$dest/usr" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 &&
	cmake --build "$work/cmake/build" >>"$work/cmake.log" 2>&1; then
	ok "CMake project: built with find_package(jitt), jitt::jitt and jitt::dso"
	run_service cmake "$work/cmake/build"
else
	fail "CMake project: build failed" "$(tail -n 8 "$work/cmake.log")"
fi

# ---- waits on glibc: the wrappers bound through the program's GOT (agent/runtime/bind.c) ----
# Main blocks on a mutex a second traced thread holds, then sleeps: the summary names the
# wait and who woke it. Built three ways, for the three kinds of slot: the PLT's (lazy
# binding), -fno-plt with -z now (GOT entries in RELRO, read-only once started) and a
# fixed-address program. Untraced ("off"), nothing is bound: its calls go to the C library.
cat >"$work/src/waits.c" <<'C'
#include <jitt/jitt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "wait_trace.h"
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int held, done;
__attribute__((noinline)) static int holder_work(int x)
{
	for (volatile int i = 0; i < 4000000; i++)
		x += i & 1;
	return x;
}
static void *holder(void *arg)
{
	jitt_thread_name("holder");
	jitt_trace_thread(arg != NULL);
	pthread_mutex_lock(&lock);
	held = 1;
	int x = holder_work(1);
	/* Main's wait must be most of its window (the summary's "mostly blocked") however
	 * busy the machine: the wake-ups around it are preempted time, not blocked, and one CI
	 * run beside a benchmark had main not mostly blocked. Asleep, it costs no CPU. */
	usleep(300000);
	/* Until main waits for it (glibc's lock word is 2 with a waiter): on a loaded machine
	 * main may not have come to its lock yet. A minute at most. */
	for (int i = 0; i < 60000 && __atomic_load_n(&lock.__data.__lock, __ATOMIC_RELAXED) != 2;
	     i++)
		usleep(1000);
	pthread_mutex_unlock(&lock);
	while (!done) /* its ring in the trace: a thread's that ended is not */
		usleep(1000);
	return (void *)(long)x;
}
int main(int argc, char **argv)
{
	int on = argc < 2 || strcmp(argv[1], "off");
	jitt_thread_name("waits-main");
	int traced = on ? jitt_trace_thread(true) : 0;
	pthread_t t;
	pthread_create(&t, NULL, holder, on ? &t : NULL);
	/* Asleep, not spinning: the summary names what a thread waited for when its window
	 * was mostly blocked, which a spin on a loaded machine could make it not be */
	while (!held)
		usleep(100);
	pthread_mutex_lock(&lock); /* until the holder is done */
	pthread_mutex_unlock(&lock);
	usleep(1000);
	int a = on ? jitt_anomaly("sdk check waits") : 0;
	if (on)
		wait_for_trace();
	done = 1;
	pthread_join(t, NULL);
	printf("traced %d anomaly %d\n", traced, a);
	return 0;
}
C
mkdir -p "$work/waits/spool"
printf 'data_dir = %s\nrun_dir = %s\nlog_level = debug\n' "$work/waits" "$work/run" \
	>"$work/waits.conf"
for how in pie fno-plt no-pie; do
	case $how in
	pie) extra= ;;
	fno-plt) extra="-fno-plt -Wl,-z,now" ;;
	no-pie) extra="-no-pie -fno-pie" ;;
	esac
	# shellcheck disable=SC2046,SC2086 # pkg-config prints lists of words
	if ! gcc -O2 $(pc --cflags jitt) -I"$work/src" "$work/src/waits.c" $extra \
		-o "$work/waits-$how" $(pc --libs jitt) 2>"$work/waits-$how.log"; then
		fail "waits ($how): build failed" "$(cat "$work/waits-$how.log")"
		continue
	fi
	check "waits ($how): no call of a wait wrapper in the program's code" sh -c \
		"! objdump -d '$work/waits-$how' | grep -q 'call.*<__wrap_pthread_mutex_lock>'"
	rm -f "$work/waits/spool/"*
	out=$(TRACE_SPOOL=$work/waits/spool JITT_CONFIG=$work/waits.conf "$work/waits-$how" \
		2>"$work/waits-$how.err")
	check "waits ($how): traces and persists ('$out')" is "$out" "traced 0 anomaly 0"
	check "waits ($how): the wrappers bound as its thread was traced" \
		grep -q 'wrappers: [1-9][0-9]* of the program.s slots bound' "$work/waits-$how.err"
	trace=$(ls "$work/waits/spool/"*.jtr 2>/dev/null | head -n 1)
	"$bin/jitt" summarize "$trace" >"$work/waits-$how.sum" 2>&1
	if grep -q '^blocked on: "waits-main"' "$work/waits-$how.sum" &&
		grep -q 'woken by "holder"' "$work/waits-$how.sum"; then
		ok "waits ($how): the summary names the mutex wait, woken by the holder"
	else
		fail "waits ($how): the summary names the mutex wait, woken by the holder" \
			"$(sed -n 1,12p "$work/waits-$how.sum")"
	fi
	out=$(JITT_CONFIG=$work/waits.conf "$work/waits-$how" off 2>"$work/waits-$how-off.err")
	check "waits ($how), no thread traced: runs, nothing bound ('$out')" sh -c \
		"[ '$out' = 'traced 0 anomaly 0' ] && ! grep -q 'wrappers:' '$work/waits-$how-off.err'"
done

# ---- a static musl program through jitt-musl.pc ----
mcc=$(pc --variable=compiler jitt-musl)
# shellcheck disable=SC2046 # pkg-config prints lists of words
if $mcc -O2 $(pc --cflags jitt-musl) "$work/src/service.c" "$work/src/work.c" \
	-o "$work/service-musl" $(pc --libs jitt-musl) 2>"$work/musl.log" &&
	file "$work/service-musl" | grep -q 'statically linked'; then
	ok "musl: a static program built with pkg-config jitt-musl ($mcc)"
	rm -f "$work/data/spool/"*
	out=$(TRACE_SPOOL=$work/data/spool JITT_CONFIG=$conf "$work/service-musl" 2>/dev/null)
	check "musl: it traces and persists ('$out')" is "$out" "traced 0 anomaly 0 work 1"
else
	fail "musl: build failed" "$(cat "$work/musl.log")"
fi

# ---- a PIE glibc program through jitt-clang.pc (docs/oem.md, "Building with clang") ----
cat >"$work/src/clang.c" <<'C'
#include <jitt/jitt.h>
#include <stdio.h>
#include "wait_trace.h"
/* Inlined into its caller: with -finstrument-functions-after-inlining it has no trace point
 * (GCC's -finstrument-functions would record its 4,000,000 calls). */
static int clang_inlined(int x)
{
	return x * 3 + 1;
}
__attribute__((noinline)) static int clang_own_work(int x)
{
	for (volatile int i = 0; i < 4000000; i++)
		x += clang_inlined(i & 1);
	return x;
}
int main(void)
{
	jitt_thread_name("clang-main");
	int traced = jitt_trace_thread(true);
	int x = clang_own_work(1);
	int a = jitt_anomaly("sdk check clang");
	wait_for_trace();
	printf("traced %d anomaly %d work %d\n", traced, a, x > 0);
	return 0;
}
C
# run_clang NAME PROGRAM: checks a program built with the clang flavour, and what it traced
run_clang() {
	name=$1 prog=$2
	objdump -d "$prog" >"$work/$name.dis"
	check "$name: lld inlined the hooks (no call to __cyg_profile_func_* left)" \
		sh -c "! grep -q 'call.*<__cyg_profile' '$work/$name.dis'"
	check "$name: the inlined function has no trace point (no clang_inlined)" \
		sh -c "! grep -q '<clang_inlined>:' '$work/$name.dis'"
	rm -f "$work/data/spool/"*
	out=$(TRACE_SPOOL=$work/data/spool JITT_CONFIG=$conf "$prog" 2>"$work/$name.err")
	check "$name: it traces and persists ('$out')" is "$out" "traced 0 anomaly 0 work 1"
	trace=$(ls "$work/data/spool/"*.jtr 2>/dev/null | head -n 1)
	"$bin/jitt" summarize "$trace" >"$work/$name.sum" 2>&1
	check "$name: the summary names the function clang kept (PIE: the load bias)" \
		grep -q ' clang_own_work$' "$work/$name.sum"
	# The calls column, whatever the blocked and preempted ones say (a loaded machine
	# preempts it).
	check "$name: ... with one call, and nothing of the inlined one" sh -c \
		"grep -Eq '% +1 .* clang_own_work\$' '$work/$name.sum' &&
		! grep -q clang_inlined '$work/$name.sum'"
}
if ! pc --exists jitt-clang; then
	echo "  skip: no jitt-clang.pc (this board builds no clang flavour: SDK_CLANG)"
elif ! command -v "$(pc --variable=compiler jitt-clang)" >/dev/null ||
	! command -v ld.lld >/dev/null; then
	echo "  skip: clang: $(pc --variable=compiler jitt-clang) or ld.lld is not installed (make deps)"
else
	ccc=$(pc --variable=compiler jitt-clang)
	# shellcheck disable=SC2046 # pkg-config prints lists of words
	if $ccc -O2 -g -fPIE -pie $(pc --cflags jitt-clang) -I"$work/src" "$work/src/clang.c" \
		-o "$work/clang" $(pc --libs jitt-clang) 2>"$work/clang.log" &&
		file -L "$work/clang" | grep -q 'pie executable'; then
		ok "clang: a PIE program built with pkg-config jitt-clang ($ccc, lld)"
		run_clang clang "$work/clang"
	else
		fail "clang: build failed" "$(cat "$work/clang.log")"
	fi
	mkdir -p "$work/cmake-clang"
	cp "$work/src/clang.c" "$work/src/wait_trace.h" "$work/cmake-clang/"
	cat >"$work/cmake-clang/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.13)
project(sdkclang C)
find_package(jitt 0.6 REQUIRED)
add_executable(clangapp clang.c)
target_link_libraries(clangapp PRIVATE jitt::clang)
CM
	if cmake -S "$work/cmake-clang" -B "$work/cmake-clang/build" -DCMAKE_C_COMPILER="$ccc" \
		-DCMAKE_PREFIX_PATH="$dest/usr" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>"$work/cmake-clang.log" 2>&1 &&
		cmake --build "$work/cmake-clang/build" >>"$work/cmake-clang.log" 2>&1; then
		ok "CMake clang: built with jitt::clang ($ccc)"
		check "CMake clang: no warning from jitt's package" \
			sh -c "! grep -q 'CMake Warning' '$work/cmake-clang.log'"
		run_clang cmake-clang "$work/cmake-clang/build/clangapp"
	else
		fail "CMake clang: build failed" "$(tail -n 8 "$work/cmake-clang.log")"
	fi
fi

# ---- sampled time through jitt-sampled.pc (docs/untimed.md), x86_64 ----
# Bursts of a short call and a long call without trace points inside: most records untimed,
# the long call's time still its own. An equal split of each window among its records
# would hand the long call's windows to the records around it (tests/test_untimed.c has
# the case); the fitted one does not.
cat >"$work/src/sampled.c" <<'C'
#include <jitt/jitt.h>
#include <stdio.h>
#include "wait_trace.h"
__attribute__((noinline)) static int sampled_leaf(int x)
{
	return x * 3 + 1;
}
__attribute__((noinline)) static int sampled_long(int x)
{
	for (volatile int i = 0; i < 4000000; i++)
		x += i & 1;
	return x;
}
int main(void)
{
	jitt_thread_name("sampled-main");
	int traced = jitt_trace_thread(true), x = 0;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 50000; i++)
			x += sampled_leaf(i);
		x += sampled_long(x);
	}
	int a = jitt_anomaly("sdk check sampled");
	wait_for_trace();
	printf("traced %d anomaly %d work %d\n", traced, a, x != 0);
	return 0;
}
C
if ! pc --exists jitt-sampled; then
	echo "  skip: no jitt-sampled.pc (sampled time is x86_64's)"
elif $(pc --variable=compiler jitt) -O2 -g $(pc --cflags jitt-sampled) -I"$work/src" \
	"$work/src/sampled.c" -o "$work/sampled" $(pc --libs jitt-sampled) 2>"$work/sampled.log"
then
	ok "sampled: a PIE program built with pkg-config jitt-sampled"
	objdump -d "$work/sampled" >"$work/sampled.dis"
	check "sampled: the hooks are inlined (no call to __cyg_profile_func_* left)" \
		sh -c "! grep -q 'call.*<__cyg_profile' '$work/sampled.dis'"
	rm -f "$work/data/spool/"*
	out=$(TRACE_SPOOL=$work/data/spool JITT_CONFIG=$conf "$work/sampled" 2>"$work/sampled.err")
	check "sampled: it traces and persists ('$out')" is "$out" "traced 0 anomaly 0 work 1"
	trace=$(ls "$work/data/spool/"*.jtr 2>/dev/null | head -n 1)
	"$bin/jitt" summarize "$trace" >"$work/sampled.sum" 2>&1
	untimed=$(sed -n 's/^times: \([0-9]*\)% of records untimed.*/\1/p' "$work/sampled.sum")
	check "sampled: the summary says most records are untimed (${untimed:-none}%)" \
		test "${untimed:-0}" -ge 80
	# sampled_long's four calls, each in a window shared with the bursts, are the fit's
	# guess (docs/untimed.md, "The guesses are named"): its lines say so.
	check "sampled: every call counted: 200000 of sampled_leaf, 4 of sampled_long" sh -c \
		"grep -Eq '% +200000 .* sampled_leaf\$' '$work/sampled.sum' &&
		grep -Eq '% +4 .* sampled_long \\[a guess: ' '$work/sampled.sum'"
	check "sampled: sampled_leaf's time is not marked as a guess" \
		sh -c "! grep -q 'sampled_leaf .a guess' '$work/sampled.sum'"
	# The share of the window's self time: an equal split would give the long call about
	# one gap of each of its four windows (a few percent); the fit gives it most. How the
	# bursts' time splits between sampled_leaf and the loop around it is weakly told by the
	# windows (docs/untimed.md, "What is left"), so it is not checked here.
	share=$(awk '$3 ~ /%$/ && / sampled_long( \[|$)/ { sub(/%/, "", $3); print $3; exit }' \
		"$work/sampled.sum")
	check "sampled: the long call keeps its time (${share:-?}% of the window's self time, half or more)" \
		awk -v x="${share:-0}" 'BEGIN { exit !(x >= 50) }'
	# main was entered before tracing began: the loop's own time is named by the stack.
	check "sampled: the time outside every traced call is named from the stack (main)" \
		grep -q ' main \[outside every traced call' "$work/sampled.sum"
else
	fail "sampled: build failed" "$(cat "$work/sampled.log")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
