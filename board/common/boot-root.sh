#!/bin/sh
# Builds the initramfs a booted board runs: the image `make install` laid out (IMAGE), as an
# OEM's image would hold it, plus what only the test needs, and an /init that boots it.
#   /                 IMAGE: /usr/bin/jitt, jittd, /etc/jitt.conf, /etc/init.d/jittd, the SDK
#   /bin/busybox      Debian's static BusyBox (sh, su, start-stop-daemon, ip, syslogd)
#   /etc/passwd       root; jitt (jittd's user, as the image must make it); app_a, app_b and
#                     system (uids 61002-61004: the apps and the system uid of uids-check.sh)
#   /etc/jitt/collector-ca.pem   the collector's CA, where jitt.conf says (docs/oem.md)
#   /jitt/            the test programs (BIN), the suite (tests/run.sh with its goldens and
#                     fake trees), tests/image-check.sh, uids-check.sh, check-lib.sh, the
#                     collector built for the board (COLLECTOR) and its certificates
# The /init: mounts, loopback up, syslogd (jittd logs there), `jitt hal`; with SUITE=1 the
# suite (its result line prefixed "jitt-boot-suite: "), then image-check.sh (prefixed
# "jitt-boot-image: "), then MARKER, then poweroff (a board that cannot, stays at MARKER).
#
# usage: boot-root.sh NAME OUT_DIR BUSYBOX BIN_DIR IMAGE_DIR COLLECTOR SUITE MARKER
#        writes OUT_DIR/initramfs.cpio.gz (OUT_DIR/root is its tree)
set -eu
name=$1 out=$2 busybox=$3 bin=$4 image=$5 collector=$6 suite=$7 marker=$8
src=$(cd "$(dirname "$0")/../.." && pwd)
root=$out/root
rm -rf "$root"
mkdir -p "$root"
cp -a "$image/." "$root/"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run" \
	"$root/var/lib" "$root/var/log" "$root/root" "$root/etc/jitt" "$root/jitt/certs"
ln -s ../run "$root/var/run"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
jitt:x:61001:61001:jittd:/nonexistent:/bin/false
app_a:x:61002:61002:an app:/nonexistent:/bin/false
app_b:x:61003:61003:another app:/nonexistent:/bin/false
system:x:61004:61004:the system uid:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
jitt:x:61001:
app_a:x:61002:
app_b:x:61003:
system:x:61004:
EOF
echo "127.0.0.1 localhost" >"$root/etc/hosts"

# The collector's certificates: made on the build machine (tests/certs.sh), its CA installed
# where the image's jitt.conf expects it.
sh "$src/tests/certs.sh" "$out/certs"
cp "$out/certs/server.pem" "$out/certs/server.key" "$root/jitt/certs/"
ca=$(sed -n 's/^#* *upload_ca_file = //p' "$root/etc/jitt.conf" | head -n 1)
mkdir -p "$root$(dirname "$ca")"
cp "$out/certs/ca.pem" "$root$ca"

mkdir -p "$root/jitt/bin"
for prog in "$bin"/*; do
	case $prog in *.map) ;; *) cp "$prog" "$root/jitt/bin/" ;; esac
done
cp "$collector" "$root/jitt/collector"
cp -r "$src/tests/golden" "$root/jitt/golden"
cp -r "$src/sim/fakes" "$root/jitt/fakes"
for f in run.sh image-check.sh uids-check.sh check-lib.sh; do
	cp "$src/tests/$f" "$root/jitt/$f"
done

cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
ip link set lo up
# A board with no real-time clock (the Pi) starts in 1970, before any certificate is valid:
# like fake-hwclock, take the last known time, here the image's build.
[ "\$(date +%Y)" -ge 2020 ] || date -s @$(date +%s) >/dev/null
syslogd -O /var/log/messages
echo "== jitt hal: $name, kernel \$(uname -r) (\$(uname -m))"
/usr/bin/jitt hal
if [ $suite = 1 ]; then
	# Every kernel we boot lets user space read the generic timer: the HAL must use it.
	# Four emulated CPUs on the build machine's two make the 16-thread stress test crawl.
	JITT_EXPECT_TIMER=cntvct JITT_STRESS_CYCLES=50 sh /jitt/run.sh --board "$name" \
		--bin /jitt/bin --fakes /jitt/fakes --golden /jitt/golden >/tmp/suite.log 2>&1
	grep -v '^ok ' /tmp/suite.log
	echo "jitt-boot-suite: \$(tail -n 1 /tmp/suite.log)"
fi
echo "== the installed image"
sh /jitt/image-check.sh 2>&1 | tee /tmp/image.log
if grep -q '^FAIL' /tmp/image.log; then
	echo "== jittd's log"
	cat /var/log/messages
fi
echo "jitt-boot-image: \$(tail -n 1 /tmp/image.log)"
echo "$marker"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --owner root:root --quiet | gzip -1) >"$out/initramfs.cpio.gz"
