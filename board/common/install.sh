#!/bin/sh
# `make install`: lays out jitt for an image under DESTDIR (docs/oem.md has the table of
# what goes where, with owners and modes):
#   BINDIR       jitt, jittd (stripped; their build-ids stay)                      0755
#   the settings file CONFIG_AGENT_CONFIG_FILE, every key at this build's default    0644
#   LIBDIR       the SDK: libjitt.a (musl), libjitt-glibc.a, libjitt-dso.a (shared   0644
#                libraries), libjitt.cflags, libjitt.ldflags, libjitt-glibc.ldflags,
#                libjitt.cc (musl's compiler); where the board builds the clang flavour
#                (SDK_CLANG): libjitt-clang.a, libjitt-clang.cflags, libjitt-clang.ldflags;
#                on x86_64, libjitt-sampled.a (sampled time)
#   PREFIX/lib/pkgconfig  jitt.pc (glibc), jitt-musl.pc, jitt-dso.pc, jitt-clang.pc, 0644
#                jitt-sampled.pc (x86_64)
#   PREFIX/lib/cmake/jitt jittConfig.cmake, jittConfigVersion.cmake                   0644
#   INCDIR       jitt.h                                                            0644
#   DOCDIR       oem.md, exclude.md, runtime.md                                    0644
#   the init files of the board's INIT_SYSTEMS, from board/common/init/layout
# Nothing under DATA_DIR or RUN_DIR: those are made at boot by the init files, with their
# owner and mode. Files are installed as the user running make; the image's build sets
# owners (root) when it packs DESTDIR.
# usage: install.sh OBJ_DIR BOARD DESTDIR PREFIX "CC" STRIP "INIT_SYSTEMS" USER GROUP "GLIBC_CC"
#                   ["CLANG_CC"]
set -eu
obj=$1 board=$2 destdir=$3 prefix=$4 cc=$5 strip=$6 systems=$7 user=$8 group=$9 glibc_cc=${10}
clang_cc=${11:-}
src=$(cd "$(dirname "$0")/../.." && pwd)

# The board's configuration is sh: CONFIG_NAME=value, strings quoted.
. "$obj/.config"
data_dir=$CONFIG_AGENT_DATA_DIR
run_dir=$CONFIG_AGENT_RUN_DIR
conf=$CONFIG_AGENT_CONFIG_FILE
bindir=$prefix/bin
libdir=$prefix/lib/jitt
incdir=$prefix/include/jitt
docdir=$prefix/share/doc/jitt

say() { printf '  %-8s %s\n' INSTALL "$1"; }
# put MODE SOURCE DEST
put() {
	install -d -m 0755 "$destdir$(dirname "$3")"
	install -m "$1" "$2" "$destdir$3"
	say "$3"
}

put 0755 "$obj/bin/jitt" "$bindir/jitt"
put 0755 "$obj/bin/jittd" "$bindir/jittd"
$strip "$destdir$bindir/jitt" "$destdir$bindir/jittd"

# The SDK. libjitt.a holds LTO bytecode: an app links it with -flto by the same compiler,
# which libjitt.cc names.
for f in libjitt.a libjitt-glibc.a libjitt-dso.a libjitt.ldflags libjitt-glibc.ldflags \
	libjitt.cflags; do
	put 0644 "$obj/lib/$f" "$libdir/$f"
done
pcs="jitt jitt-musl jitt-dso"
clang=
if [ -n "$clang_cc" ]; then
	for f in libjitt-clang.a libjitt-clang.cflags libjitt-clang.ldflags; do
		put 0644 "$obj/lib/$f" "$libdir/$f"
	done
	pcs="$pcs jitt-clang"
	clang="$clang_cc $obj/lib/libjitt-clang.cflags $obj/lib/libjitt-clang.ldflags"
fi
# Sampled time (x86_64 boards): hooks that time about one record in 32, linked before
# libjitt (docs/untimed.md); jitt-sampled.pc puts them there.
if [ -f "$obj/lib/libjitt-sampled.a" ]; then
	put 0644 "$obj/lib/libjitt-sampled.a" "$libdir/libjitt-sampled.a"
	pcs="$pcs jitt-sampled"
	JITT_SDK_SAMPLED=1
	export JITT_SDK_SAMPLED
fi
# Sleds (x86_64 boards): trace points patched in at start-up, where the compiler kept a
# function (ringbuf/sleds.h); jitt-sleds.pc.
if [ -f "$obj/lib/libjitt-sleds.a" ]; then
	put 0644 "$obj/lib/libjitt-sleds.a" "$libdir/libjitt-sleds.a"
	put 0644 "$obj/lib/libjitt-sleds.cflags" "$libdir/libjitt-sleds.cflags"
	put 0644 "$obj/lib/libjitt-sleds.ldflags" "$libdir/libjitt-sleds.ldflags"
	pcs="$pcs jitt-sleds"
	JITT_SDK_SLEDS=$(cat "$obj/lib/libjitt-sleds.cflags")
	JITT_SDK_SLEDS_LDFLAGS=$(cat "$obj/lib/libjitt-sleds.ldflags")
	export JITT_SDK_SLEDS JITT_SDK_SLEDS_LDFLAGS
fi
tmp=$(mktemp)
sdk=$(mktemp -d)
trap 'rm -rf "$tmp" "$sdk"' EXIT
echo "$cc" >"$tmp"
put 0644 "$tmp" "$libdir/libjitt.cc"
# pkg-config and CMake descriptions of the same archives and flags (sdk-files.sh).
version=$(sed -n 's/^#define JITT_VERSION "\(.*\)"$/\1/p' "$src/agent/runtime/api.c")
sh "$src/board/common/sdk-files.sh" "$sdk" "$prefix" "$version" "$glibc_cc" "$cc" \
	"$obj/lib/libjitt.cflags" "$obj/lib/libjitt-glibc.ldflags" "$obj/lib/libjitt.ldflags" $clang
for f in $(for p in $pcs; do echo "pkgconfig/$p.pc"; done) \
	cmake/jitt/jittConfig.cmake cmake/jitt/jittConfigVersion.cmake; do
	put 0644 "$sdk/$f" "$prefix/lib/$f"
done
put 0644 "$src/agent/jitt.h" "$incdir/jitt.h"
for f in oem.md exclude.md runtime.md; do
	put 0644 "$src/docs/$f" "$docdir/$f"
done

# The settings file: every key at this build's default, commented out, but the uploader's
# (where to send, whom to trust, where consent is kept), which an OEM sets.
yn() { [ "${1:-n}" = y ] && echo 1 || echo 0; }
level() { case $1 in 0) echo error ;; 1) echo warn ;; 2) echo info ;; *) echo debug ;; esac; }
pick=first
[ "${CONFIG_UPLOADER_PICK_SEVERE:-n}" = y ] && pick=severe
[ "${CONFIG_UPLOADER_PICK_CAMPAIGN:-n}" = y ] && pick=campaign
up='' # the uploader's active lines; commented out in a build without the uploader
[ "${CONFIG_UPLOADER:-n}" = y ] || up='# '
{
	cat <<CONF
# jitt's settings, read by jittd and by every traced app at start (agent/config.h lists
# the keys; docs/oem.md says what an OEM sets). \`key = value\`, '#' starts a comment.
# The lines commented out show this build's defaults (board $board, its Kconfig):
# uncomment one to change it.

# Folders: made by the image's init with their owner and mode (never by a traced app).
# data_dir = $data_dir
# run_dir = $run_dir

# The detectors (docs/runtime.md).
# hang_ms = $CONFIG_AGENT_HANG_MS
# jank_frames = $CONFIG_AGENT_JANK_FRAMES
# frame_budget_us = $CONFIG_AGENT_FRAME_BUDGET_US
# cooldown_ms = $CONFIG_AGENT_COOLDOWN_MS
# On a slow board: slow means over this % of the normal frame too, none during the warm-up,
# and one clearly worse anomaly may come through a cool-down (0: off).
# jank_normal_pct = $CONFIG_AGENT_JANK_NORMAL_PCT
# jank_warmup_frames = $CONFIG_AGENT_JANK_WARMUP_FRAMES
# cooldown_preempt_pct = $CONFIG_AGENT_COOLDOWN_PREEMPT_PCT

# Raw traces on the device (they never leave it).
# max_traces = $CONFIG_AGENT_MAX_TRACES
# max_trace_mb = $CONFIG_AGENT_MAX_TRACE_MB
# keep_traces = $(yn "${CONFIG_AGENT_KEEP_TRACES:-n}")

# The runtime in each traced app.
# enabled = $(yn "${CONFIG_AGENT_ENABLED:-n}")
# trace_main = $(yn "${CONFIG_AGENT_TRACE_MAIN:-n}")
# max_threads = $CONFIG_RB_MAX_TRACED_THREADS
# Each traced thread's ring, in KiB (a power of two): on call-heavy code 1 MiB holds
# about 10 ms (docs/runtime.md, "How much a ring holds").
# ring_kb = $(((1 << CONFIG_RB_RING_SHIFT) / 1024))
# sched_pages = $CONFIG_AGENT_SCHED_PAGES

# A program built with sleds (jitt-sleds.pc, x86_64; docs/oem.md "Sleds"): sampled,
# timed or off; a \`jitt exclude\` list of functions left untraced; without a list, the
# functions whose calls last under sleds_learn_ns on average are left out as the runtime
# learns them, a profile's top kept (0: every function traced). What it learnt is kept
# for the program's next run in a folder of the app's own (unset: the app's cache folder,
# \$XDG_CACHE_HOME/jitt or ~/.cache/jitt; off: none).
# sleds = sampled
# sleds_exclude = /etc/jitt/app.exclude
# sleds_learn_ns = 250
# sleds_memory = off

# Who besides root may trigger, grant and revoke (-1: nobody).
# system_uid = $CONFIG_AGENT_SYSTEM_UID
# log_level = $(level "$CONFIG_AGENT_LOG_LEVEL")

# The uploader (docs/uploader.md): only with the user's consent, only on Wi-Fi, over TLS.
# The collector's URL (https only), and the CA bundle (PEM) its chain must lead to.
${up}upload_url = ${CONFIG_UPLOADER_URL:-https://localhost:8443/v1/reports}
${up}upload_ca_file = ${CONFIG_UPLOADER_CA_FILE:-/etc/jitt/collector-ca.pem}
# The consent file, "granted" or "revoked" (missing: revoked). \`jitt consent grant|revoke\`
# writes it through jittd, or the settings app writes it itself (docs/oem.md).
CONF
	if [ -n "${CONFIG_UPLOADER_CONSENT_FILE:-}" ]; then
		echo "${up}consent_file = $CONFIG_UPLOADER_CONSENT_FILE"
	else
		echo "# consent_file = $data_dir/consent"
	fi
	cat <<CONF
# upload_pin = ${CONFIG_UPLOADER_PIN_SHA256:-(SHA-256 of the collector's public key, 64 hex)}
# upload_budget = ${CONFIG_UPLOADER_BUDGET_COUNT:-3}
# upload_budget_days = ${CONFIG_UPLOADER_BUDGET_DAYS:-7}
# upload_pick = $pick
# upload_campaign = ${CONFIG_UPLOADER_CAMPAIGN:-}
# upload_rotation_days = ${CONFIG_UPLOADER_ROTATION_DAYS:-30}
# upload_thread_names = ${CONFIG_UPLOADER_THREAD_NAMES:-main ui render}
# upload_reasons = ${CONFIG_UPLOADER_REASONS:-hang jank slow-frame slow-start}
# upload_max_attempts = ${CONFIG_UPLOADER_MAX_ATTEMPTS:-8}
# upload_timeout_ms = ${CONFIG_UPLOADER_TIMEOUT_MS:-10000}
# upload_poll_s = 30
# upload_backoff_ms = 2000
# upload_allow_ethernet = $(yn "${CONFIG_UPLOADER_ALLOW_ETHERNET:-n}")

# Where the jitt command fetches debug files of stripped binaries (docs/symbols.md):
# http:// debuginfod servers, space-separated (DEBUGINFOD_URLS wins), and the cache
# folder (default: the user's ~/.cache/jitt/debuginfod). jittd never asks a server.
# debuginfod_urls = http://debuginfod.example:8002
# debuginfod_cache = /var/cache/jitt-debuginfod
CONF
} >"$tmp"
put 0644 "$tmp" "$conf"

# The init files of this board's init systems (board/common/init/layout).
case $data_dir in /var/lib/?*) state=${data_dir#/var/lib/} ;; *) state= ;; esac
case $run_dir in /run/?*) runtime=${run_dir#/run/} ;; *) runtime= ;; esac
grep -v '^#' "$src/board/common/init/layout" | while read -r system file dest mode; do
	[ -n "$system" ] || continue
	case " $systems " in *" $system "*) ;; *) continue ;; esac
	if [ "$system" = systemd ] && { [ -z "$state" ] || [ -z "$runtime" ]; }; then
		echo "install: the systemd unit wants data_dir under /var/lib/ and run_dir under" \
			"/run/ (they are $data_dir and $run_dir)" >&2
		exit 1
	fi
	from=$src/board/$board/init/$file
	[ -f "$from" ] || from=$src/board/common/init/$file
	dest=$(echo "$dest" | sed "s|@PREFIX@|$prefix|g")
	sed -e "s|@PREFIX@|$prefix|g" -e "s|@BINDIR@|$bindir|g" -e "s|@DOCDIR@|$docdir|g" \
		-e "s|@DATA_DIR@|$data_dir|g" -e "s|@RUN_DIR@|$run_dir|g" \
		-e "s|@STATE_DIRECTORY@|$state|g" -e "s|@RUNTIME_DIRECTORY@|$runtime|g" \
		-e "s|@CONFIG_FILE@|$conf|g" -e "s|@USER@|$user|g" -e "s|@GROUP@|$group|g" \
		"$from" >"$tmp"
	if grep -n '@[A-Z_]*@' "$tmp" >&2; then
		echo "install: $from: a name install.sh does not fill in (above)" >&2
		exit 1
	fi
	put "$mode" "$tmp" "$dest"
done
