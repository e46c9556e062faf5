#!/bin/bash
# run.sh boots Debian's 6.12 kernel in a QEMU guest and runs the real-kernel
# tests there: Soft-RoCE (rdma_rxe, device rxe0 on a dummy netdev),
# ib_uverbs, udmabuf, kprobes/fentry. The tests are static binaries built
# here with CGO_ENABLED=0 go test -c.
#
# Usage:
#   scripts/vmtest/run.sh                 every package of the table below whose directory exists
#   scripts/vmtest/run.sh ./ib            only ./ib (name several to run several)
#   GAUDI_VMTEST_RUN='^TestKernelRegMR$' scripts/vmtest/run.sh ./ib
#                                         another -test.run filter for the packages named
#   GAUDI_VMTEST_BENCH=off scripts/vmtest/run.sh
#                                         no benchmarks (the table's bench column is ignored)
#   GAUDI_VMTEST_ENV='GODEBUG=x=1 FOO=2' scripts/vmtest/run.sh ./ib
#                                         extra environment for the test binaries in the guest
#   GAUDI_VMTEST_ARGS='-test.count=6' scripts/vmtest/run.sh ./ipc
#                                         extra flags for the test runs (not the benchmarks)
#   GAUDI_VMTEST_BENCHARGS='-test.benchtime=3x' scripts/vmtest/run.sh ./rdma
#                                         extra flags for the benchmarks (after the defaults,
#                                         so they override them)
#   GAUDI_VMTEST_SMP=1 scripts/vmtest/run.sh ./rdma
#                                         the guest's CPUs (default: the host's). make vmtest
#                                         runs ./rdma's benchmarks once more in a one-CPU
#                                         guest: single-threaded TCG runs a guest's CPUs in
#                                         turns, so work spread over two of them pays for
#                                         the turns (a woken thread waits for the other
#                                         CPU's turn to end), which no real machine does;
#                                         one CPU shows the work itself.
#   GAUDI_VMTEST_TCG=multi GAUDI_VMTEST_SMP=2 scripts/vmtest/run.sh ./rdma
#                                         multi-threaded TCG (without KVM): each vCPU on
#                                         a host thread of its own, so the guest's CPUs run
#                                         at once, as a machine's do. make vmtest runs
#                                         ./rdma's benchmarks a third time so, where the
#                                         simulated DMA engines' copies run beside rxe's
#                                         work as a Gaudi's engines run beside the CPU.
#                                         Only for runs that attach no BPF or tracepoint
#                                         (see the boot below).
#   make vmtest                           the same as the first form; CI runs it from make test
#   GAUDI_VMTEST_PAIR=1 scripts/vmtest/run.sh
#   make vmtest-pair                      two guests on one virtual network (QEMU dgram
#                                         netdevs over host UDP), rxe0 on each one's NIC
#                                         (10.78.0.1 server, 10.78.0.2 client), running
#                                         ./ib/cm's and ./examples/rdma-send's
#                                         TestTwoGuests in both: our client (the sender)
#                                         in one against our server (the receiver) in
#                                         the other. Opt-in:
#                                         not part of make vmtest (see PAIR below).
#
# Adding a package: one line in PACKAGES below (directory, -test.run filter,
# -test.bench filter or -). The binary runs in the guest as root from a copy
# of the package directory's testdata/, with GAUDI_VMTEST=1 in its
# environment: a test must fail, not skip, when that is set and the kernel
# feature it needs is missing. Benchmarks run with -test.benchmem and
# -test.cpu 1,N (N = guest CPUs). For ./ib, regmr_bench.c (libibverbs'
# ibv_reg_mr + ibv_dereg_mr of 1 MiB) and postpoll_bench.c (libibverbs'
# ibv_post_send of a 64-byte RDMA WRITE and ibv_poll_cq of its completion),
# linked statically with the rxe provider, run right before and right
# after its benchmarks, so the figures are taken under the same load; all
# figures end the output.
#
# The guest has: /dev/infiniband/uverbs0 (rxe0, port 1 ACTIVE, GIDs of
# 10.77.0.1 on netdev rxe_dummy), /dev/infiniband/rdma_cm (rdma_ucm), /dev/udmabuf, tracefs at
# /sys/kernel/tracing, debugfs, bpffs at /sys/fs/bpf, busybox, iproute2's ip
# and rdma, and no libc (test binaries must be static).
#
# Environment:
#   GAUDI_VMTEST_CACHE    downloads, unpacked kernel, logs (default ~/.cache/gaudi-go/vm)
#   GAUDI_VMTEST_TIMEOUT  seconds for the whole guest (default 900)
#   GAUDI_VMTEST_KERNEL   kernel package (default: newest linux-image-6.12.*+deb12-amd64-unsigned)
#   GO                    the go command (default go, else /usr/local/go/bin/go)
#
# Exit status: 0 when the guest booted and every step passed; 1 when a test,
# the rxe setup or a benchmark failed, the guest did not boot, or it ran out
# of time. The guest's console is kept in $GAUDI_VMTEST_CACHE/console.log.
set -euo pipefail

# The package table: directory, -test.run filter, -test.bench filter (- for none).
PACKAGES='
./ib             ^TestKernel           RegMR1MiB|KernelPostPoll
./ib/cm          ^TestKernel           -
./sim            ^TestUdmabufExport    -
./tools/hltrace  ^(TestVM|TestIntegrationCommandTree) -
./examples/rdma  ^TestKernel           -
./tools/hlperf   ^TestKernel           -
./ipc            .                     -
./rdma           ^TestKernel           ^BenchmarkKernelRDMA$
./examples/rdma-send ^TestKernel       -
'

# Kernel modules loaded in the guest (their dependencies come along);
# virtio_net is the NIC of the two-guest mode.
MODULES="rdma_rxe ib_uverbs rdma_ucm crc32_generic dummy virtio_net"
# Host binaries copied into the guest with their shared libraries: the
# real RDMA peers the ib/cm tests talk to (rping from rdmacm-utils,
# perftest's ib_*_bw) among them, with libibverbs' rxe provider and its
# driver file and libgcc_s (which glibc loads for pthread_exit) in
# HOST_FILES, copied to the same path.
HOST_BINS="/usr/sbin/ip /usr/bin/rdma /usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_write_lat /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
HOST_FILES="/etc/libibverbs.d/rxe.driver /usr/lib/x86_64-linux-gnu/libgcc_s.so.1"
# Rounds of the C benchmark (libibverbs ibv_reg_mr + ibv_dereg_mr of 1 MiB).
BENCH_ROUNDS=2000

W=${GAUDI_VMTEST_CACHE:-${HOME:-/root}/.cache/gaudi-go/vm}
TMO=${GAUDI_VMTEST_TIMEOUT:-900}
SMP=${GAUDI_VMTEST_SMP:-$(nproc)}
case ${GAUDI_VMTEST_TCG:-single} in
single | multi) ;;
*) echo "vmtest: GAUDI_VMTEST_TCG=$GAUDI_VMTEST_TCG: want single or multi" >&2; exit 1 ;;
esac
SELF=$(readlink -f "$0")
HERE=$(dirname "$SELF")
cd "$HERE/../.."

if [ -z "${GO:-}" ]; then
	GO=go
	command -v go >/dev/null || GO=/usr/local/go/bin/go
fi

T0=$(date +%s.%N)
STEP_T=$T0
say() { echo "vmtest: $*" >&2; }
die() { say "$*"; exit 1; }
# step ends the timing of the previous step and names the next one.
step() {
	local now
	now=$(date +%s.%N)
	[ -n "${STEP_NAME:-}" ] && say "$(awk -v a="$STEP_T" -v b="$now" -v n="$STEP_NAME" 'BEGIN{printf "%-28s %6.1f s", n, b-a}')"
	STEP_T=$now STEP_NAME=$1
}

# ---- two guests? ---------------------------------------------------------------
# PAIR=1 boots two guests, a server and a client, joined by a virtual
# network: each QEMU's virtio NIC is a dgram netdev that sends its frames
# over UDP on the host's loopback to the other's (QEMU 7.2's -netdev
# dgram; no privileges, no bridge). rxe carries traffic only in the
# initial network namespace, so two rxe devices talking over a wire need
# two kernels. Both run ./ib/cm's TestTwoGuests with their role and the
# other's address. Under TCG the two guests share the host's CPUs, hence
# opt-in (make vmtest-pair), not part of make vmtest.
PAIR=${GAUDI_VMTEST_PAIR:-}
case $PAIR in '' | 0) PAIR= ;; 1) ;; *) die "GAUDI_VMTEST_PAIR=$PAIR: want 1 or nothing" ;; esac
PAIR_SERVER=10.78.0.1 PAIR_CLIENT=10.78.0.2

# ---- which packages ---------------------------------------------------------
declare -a SEL_PKG SEL_RUN SEL_BENCH ARGS=()
for a in "$@"; do
	case $a in -*) die "unknown option $a (see the usage at the top of $0)";; esac
	a="./${a#./}"
	a=${a%/}
	grep -qE "^$a[[:space:]]" <<<"$PACKAGES" || die "$a is not in the package table of $0"
	[ -d "$a" ] || die "$a does not exist"
	ARGS+=("$a")
done
while read -r dir run bench; do
	[ -n "$dir" ] || continue
	[ ${#ARGS[@]} = 0 ] || [[ " ${ARGS[*]} " == *" $dir "* ]] || continue
	if [ ! -d "$dir" ]; then
		say "skipping $dir: no such directory yet"
		continue
	fi
	[ -n "${GAUDI_VMTEST_RUN:-}" ] && run=$GAUDI_VMTEST_RUN
	[ "${GAUDI_VMTEST_BENCH:-}" = off ] && bench=-
	SEL_PKG+=("$dir") SEL_RUN+=("$run") SEL_BENCH+=("$bench")
done <<<"$PACKAGES"
if [ -n "$PAIR" ]; then
	# ib/cm's and examples/rdma-send's TestTwoGuests, both by default.
	[ ${#ARGS[@]} = 0 ] && ARGS=(./ib/cm ./examples/rdma-send)
	SEL_PKG=() SEL_RUN=() SEL_BENCH=()
	for a in "${ARGS[@]}"; do
		case $a in
		./ib/cm | ./examples/rdma-send) ;;
		*) die "GAUDI_VMTEST_PAIR runs ./ib/cm and ./examples/rdma-send only" ;;
		esac
		SEL_PKG+=("$a") SEL_RUN+=("${GAUDI_VMTEST_RUN:-^TestTwoGuests\$}") SEL_BENCH+=(-)
	done
fi
say "packages: ${SEL_PKG[*]:-(none: boot and rxe check only)}"

# ---- host tools ---------------------------------------------------------------
step "host packages"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=""
for p in qemu-system-x86 gcc libc6-dev libibverbs-dev ibverbs-providers rdmacm-utils perftest; do have_pkg "$p" || need="$need $p"; done
APT_UPDATED=
if [ -n "$need" ]; then
	say "installing$need"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	APT_UPDATED=1
	# shellcheck disable=SC2086
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

mkdir -p "$W"
exec 9>"$W/lock"
flock 9 # one builder of the shared cache at a time; released before the guest boots

# ---- kernel and busybox (downloaded once, unpacked into the cache) ------------
step "kernel download/unpack"
newest_kernel() {
	apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' |
		awk '{print $1}' | sort -V | tail -n 1
}
KPKG=${GAUDI_VMTEST_KERNEL:-$(newest_kernel)}
if [ -z "$KPKG" ] && [ -z "$APT_UPDATED" ]; then
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	KPKG=$(newest_kernel)
fi
[ -n "$KPKG" ] || die "no linux-image-6.12.*+deb12-amd64-unsigned package in the apt sources (bookworm-security)"
KVER=${KPKG#linux-image-}
KVER=${KVER%-unsigned}
K=$W/kernel-$KVER
BB=$W/busybox/bin/busybox
download() { # download PKG: the .deb into $W/debs
	local opt=()
	if [ "$(id -u)" = 0 ]; then opt=(-o APT::Sandbox::User=root); fi
	mkdir -p "$W/debs"
	(cd "$W/debs" && rm -f "$1"_*.deb && apt-get download -q "${opt[@]}" "$1" >/dev/null)
}
if [ ! -e "$K/.done" ]; then
	say "fetching $KPKG"
	if ! download "$KPKG" && [ -z "${GAUDI_VMTEST_KERNEL:-}" ] && [ -z "$APT_UPDATED" ]; then
		# Stale package lists: the security archive keeps only the newest build.
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		KPKG=$(newest_kernel)
		KVER=${KPKG#linux-image-}
		KVER=${KVER%-unsigned}
		K=$W/kernel-$KVER
		say "fetching $KPKG after apt-get update"
		download "$KPKG" || die "apt-get download $KPKG failed"
	fi
	[ -e "$W/debs/${KPKG}"_*.deb ] || die "apt-get download $KPKG failed"
	rm -rf "$K" "$W"/kernel-*
	mkdir -p "$K"
	dpkg-deb --fsys-tarfile "$W/debs/${KPKG}"_*.deb |
		tar -x -C "$K" --wildcards "./boot/vmlinuz-$KVER" "./lib/modules/$KVER/*"
	rm -f "$W/debs/${KPKG}"_*.deb
	touch "$K/.done"
fi
if [ ! -x "$BB" ]; then
	download busybox-static || die "apt-get download busybox-static failed"
	rm -rf "$W/busybox"
	mkdir -p "$W/busybox"
	dpkg-deb -x "$W/debs"/busybox-static_*.deb "$W/busybox"
	rm -f "$W/debs"/busybox-static_*.deb
fi
[ -x "$BB" ] || die "busybox-static has no bin/busybox"

# ---- the base initramfs: busybox, modules, ip, rdma, /init (cached) -----------
step "base initramfs"
KEY=$(cat "$SELF" "$BB" $HOST_BINS $HOST_FILES | sha256sum | cut -c1-12)
BASE=$W/base-$KVER-$KEY.cpio.gz
if [ ! -e "$BASE" ]; then
	MD=$K/lib/modules/$KVER
	R=$W/base-root
	rm -rf "$R" "$W"/base-*.cpio.gz
	mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root}
	ln -s usr/bin "$R/bin"; ln -s usr/sbin "$R/sbin"; ln -s usr/lib "$R/lib"; ln -s usr/lib64 "$R/lib64"
	cp "$BB" "$R/usr/bin/busybox"

	declare -A MODFILE=() ADDED=()
	while read -r base path; do
		base=${base%%.ko*}
		MODFILE[${base//-/_}]=$path
	done < <(find "$MD/kernel" -name '*.ko*' -printf '%f %p\n')
	unpack() { case $1 in *.xz) xz -dc "$1" ;; *.zst) zstd -dcq "$1" ;; *) cat "$1" ;; esac; }
	# addmod NAME copies a module and, first, what its .modinfo says it depends on.
	addmod() {
		local name=${1//-/_} file dep rel
		[ -z "${ADDED[$name]:-}" ] || return 0
		ADDED[$name]=1
		file=${MODFILE[$name]:-}
		if [ -z "$file" ]; then
			grep -q "/$name\.ko" "$MD/modules.builtin" && return 0
			die "kernel $KVER has no module $name"
		fi
		for dep in $(unpack "$file" | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do
			addmod "$dep"
		done
		rel=${file#"$MD"/}
		rel=${rel%.xz}; rel=${rel%.zst}
		mkdir -p "$R/lib/modules/$KVER/$(dirname "$rel")"
		unpack "$file" >"$R/lib/modules/$KVER/$rel"
	}
	for m in $MODULES; do addmod "$m"; done
	cp "$MD/modules.builtin" "$MD/modules.order" "$R/lib/modules/$KVER/"
	"$BB" depmod -b "$R" "$KVER"

	# put FILE copies a host file to the same /usr path in the guest.
	put() {
		local t=/usr/${1#/usr/}
		[ -e "$R$t" ] && return 0
		mkdir -p "$R$(dirname "$t")"
		cp -L "$1" "$R$t"
	}
	for b in $HOST_BINS; do
		put "$b"
		for l in $(ldd "$b" | grep -o '/[^ ]*'); do put "$l"; done
	done
	for f in $HOST_FILES; do
		mkdir -p "$R$(dirname "$f")"
		cp -L "$f" "$R$f"
	done

	cat >"$R/init" <<-'EOF'
	#!/bin/busybox sh
	/bin/busybox --install -s
	export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs dev /dev
	mount -t tmpfs tmp /tmp
	mount -t tmpfs run /run
	mount -t tracefs tracefs /sys/kernel/tracing
	mount -t debugfs debugfs /sys/kernel/debug
	mount -t bpf bpf /sys/fs/bpf
	echo /sbin/modprobe >/proc/sys/kernel/modprobe
	/usr/sbin/ip link set lo up
	echo; echo "VMTEST_BOOTED $(uname -r) cpus=$(nproc)"
	cd /guest && sh ./guest.sh
	echo "VMTEST_RC=$?"
	poweroff -f
	EOF
	chmod +x "$R/init"
	(cd "$R" && find . -mindepth 1 | "$BB" cpio -o -H newc 2>/dev/null) | gzip -1 >"$BASE.tmp"
	mv "$BASE.tmp" "$BASE"
	rm -rf "$R"
fi
flock -u 9

# ---- this run's part: test binaries, the C benchmark, guest.sh ----------------
RUN=$(mktemp -d "${TMPDIR:-/tmp}/gaudi-vmtest.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
G=$RUN/root/guest
mkdir -p "$G"

step "build test binaries (and C benchmark)"
GUEST_SCRIPT=$G/guest.sh
TEST_ARGS= # GAUDI_VMTEST_ARGS, quoted for guest.sh
for a in ${GAUDI_VMTEST_ARGS:-}; do
	[[ $a == -test.* ]] || die "GAUDI_VMTEST_ARGS: $a is not a -test.* flag"
	TEST_ARGS+=$(printf ' %q' "$a")
done
BENCH_ARGS= # GAUDI_VMTEST_BENCHARGS, quoted for guest.sh
for a in ${GAUDI_VMTEST_BENCHARGS:-}; do
	[[ $a == -test.* ]] || die "GAUDI_VMTEST_BENCHARGS: $a is not a -test.* flag"
	BENCH_ARGS+=$(printf ' %q' "$a")
done
for e in ${GAUDI_VMTEST_ENV:-}; do
	[[ $e == [A-Za-z_]*=* ]] || die "GAUDI_VMTEST_ENV: $e is not NAME=value"
	printf 'export %q\n' "$e" >>"$GUEST_SCRIPT"
done
if [ -n "$PAIR" ]; then
	# The role comes from the kernel command line (vmtest.role=...).
	cat >>"$GUEST_SCRIPT" <<-EOF
	case \$(cat /proc/cmdline) in
	*vmtest.role=server*) export GAUDI_VMTEST_PAIR_ROLE=server GAUDI_VMTEST_PAIR_SELF=$PAIR_SERVER GAUDI_VMTEST_PAIR_PEER=$PAIR_CLIENT ;;
	*vmtest.role=client*) export GAUDI_VMTEST_PAIR_ROLE=client GAUDI_VMTEST_PAIR_SELF=$PAIR_CLIENT GAUDI_VMTEST_PAIR_PEER=$PAIR_SERVER ;;
	*) echo "no vmtest.role on the kernel command line"; exit 1 ;;
	esac
	EOF
fi
cat >>"$GUEST_SCRIPT" <<'EOF'
# guest.sh: written by scripts/vmtest/run.sh; runs in the guest as root.
export GAUDI_VMTEST=1
failed=0
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
result() { # result NAME RC START
	if [ "$2" = 0 ]; then r=PASS; else r="FAIL (exit $2)"; failed=1; fi
	echo "VMTEST_RESULT $1: $r in $(since "$3") s"
}

# Wait for the random pool (a blocking read returns once the kernel's
# crng is ready): its readiness flips a static key, patched into kernel
# text that other CPUs may be running, which multi-threaded TCG does not
# survive reliably (see the boot's comment in run.sh).
head -c 1 /dev/random >/dev/null
t=$(now)
(
	set -e
	modprobe rdma_rxe
	modprobe crc32_generic # rxe needs the crc32 shash; no module dependency says so
	modprobe rdma_ucm      # /dev/infiniband/rdma_cm: no device alias loads it
	if [ -n "${GAUDI_VMTEST_PAIR_ROLE:-}" ]; then
		# Two guests: rxe0 on the NIC, this guest's address by its role.
		modprobe virtio_net
		/usr/sbin/ip link set eth0 up
		/usr/sbin/ip addr add "$GAUDI_VMTEST_PAIR_SELF/24" dev eth0
		rdma link add rxe0 type rxe netdev eth0
	else
		modprobe dummy numdummies=0
		/usr/sbin/ip link add rxe_dummy type dummy
		/usr/sbin/ip link set rxe_dummy up
		/usr/sbin/ip addr add 10.77.0.1/24 dev rxe_dummy
		rdma link add rxe0 type rxe netdev rxe_dummy
	fi
	rdma link show
	rdma link show | grep -q 'rxe0/1 state ACTIVE'
	test -c /dev/infiniband/uverbs0
	test -c /dev/infiniband/rdma_cm
	test -c /dev/udmabuf
)
result "rxe0 + uverbs0 + udmabuf" $? "$t"
EOF

BUILD_FAILED=0
# The libibverbs figure to compare the ib package's REG_MR benchmark with:
# it runs right before and right after that benchmark, so both see the
# same load on the host.
CBENCH=
if [[ " ${SEL_PKG[*]:-} " == *" ./ib "* ]] && [ "${GAUDI_VMTEST_BENCH:-}" != off ]; then
	for c in regmr_bench postpoll_bench; do
		if gcc -static -O2 -DRDMA_STATIC_PROVIDERS=rxe -o "$G/$c" "$HERE/$c.c" \
			-Wl,--start-group -lrxe-rdmav34 -libverbs -lnl-route-3 -lnl-3 -Wl,--end-group -lpthread \
			2> >(grep -vE 'statically linked applications|: in function' >&2); then
			CBENCH+="/guest/$c $BENCH_ROUNDS rxe0 && "
		else
			say "building $c.c (static libibverbs with the rxe provider) failed"
			BUILD_FAILED=1
		fi
	done
	CBENCH+=true
fi
cbench() { # the guest lines that run the C benchmark, when built
	[ -n "$CBENCH" ] || return 0
	cat <<-EOF

	t=\$(now)
	echo "=== libibverbs: ibv_reg_mr + ibv_dereg_mr of 1 MiB, post + poll of a 64-byte RDMA WRITE, on rxe0 ($1)"
	$CBENCH
	result "libibverbs benchmark ($1)" \$? "\$t"
	EOF
}

for i in "${!SEL_PKG[@]}"; do
	dir=${SEL_PKG[$i]} name=$(basename "${SEL_PKG[$i]}")
	mkdir -p "$G/$name"
	if ! CGO_ENABLED=0 "$GO" test -c -o "$G/$name/$name.test" "$dir"; then
		say "building the test binary of $dir failed"
		BUILD_FAILED=1
		continue
	fi
	if [ -d "$dir/testdata" ]; then cp -a "$dir/testdata" "$G/$name/"; fi
	cat >>"$GUEST_SCRIPT" <<-EOF

	t=\$(now)
	echo "=== $dir: -test.run '${SEL_RUN[$i]}'"
	(cd /guest/$name && ./$name.test -test.v -test.timeout 300s -test.run '${SEL_RUN[$i]}'$TEST_ARGS)
	result "$dir tests" \$? "\$t"
	EOF
	if [ "${SEL_BENCH[$i]}" != - ]; then
		if [ "$dir" = ./ib ]; then cbench before >>"$GUEST_SCRIPT"; fi
		cat >>"$GUEST_SCRIPT" <<-EOF

		t=\$(now)
		echo "=== $dir: -test.bench '${SEL_BENCH[$i]}'"
		(cd /guest/$name && ./$name.test -test.run '^\$' -test.bench '${SEL_BENCH[$i]}' -test.benchmem -test.cpu 1,\$(nproc) -test.timeout 300s$BENCH_ARGS)
		result "$dir benchmarks" \$? "\$t"
		EOF
		if [ "$dir" = ./ib ]; then cbench after >>"$GUEST_SCRIPT"; fi
	fi
done
echo 'exit $failed' >>"$GUEST_SCRIPT"

step "initramfs"
(cd "$RUN/root" && find . -mindepth 1 | "$BB" cpio -o -H newc 2>/dev/null) | gzip -1 >"$RUN/guest.cpio.gz"
cat "$BASE" "$RUN/guest.cpio.gz" >"$RUN/initrd.gz"

# ---- boot ---------------------------------------------------------------------
step "guest (boot, tests, poweroff)"
# /dev/kvm may be kvm_pvm (no VT-x/AMD-V: KVM initialises, then fails or
# crawls), so KVM is used only with the vmx/svm flag and not PVM.
if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
	ACC=(-accel kvm -cpu host)
else
	# One host thread runs every vCPU. With multi-threaded TCG the guest
	# oopsed twice (2026-11-26) on an int3 left in kernel text at a
	# patched site ("Oops: int3" in get_random_u32 from memfd_create, and
	# while hltrace attached tracepoints): the kernel patches its text
	# with int3 and a cross-CPU sync (text_poke_bp) each time a BPF
	# program or tracepoint is attached or detached, and another vCPU
	# still ran the old translation. A single TCG thread makes that
	# patching appear atomic to the guest; the guest keeps its CPUs.
	# GAUDI_VMTEST_TCG=multi asks for multi-threaded TCG anyway, for runs
	# that attach nothing (the rdma benchmarks): the guest waits for its
	# random pool before the tests (guest.sh), so the one static key
	# every boot flips late (random's crng_is_ready) flips while nothing
	# else runs.
	ACC=(-accel "tcg,thread=${GAUDI_VMTEST_TCG:-single}")
fi
say "qemu ${ACC[*]}, timeout ${TMO}s, kernel $KVER"
LOG=$RUN/console.log
QEMU=(qemu-system-x86_64 "${ACC[@]}" -smp "$SMP" -m 2G -nodefaults -no-reboot
	-nographic -serial stdio -kernel "$K/boot/vmlinuz-$KVER" -initrd "$RUN/initrd.gz")
set +e
if [ -z "$PAIR" ]; then
	timeout "$TMO" "${QEMU[@]}" -append "console=ttyS0 panic=-1 loglevel=4" </dev/null 2>&1 |
		tr -d '\r' | tee "$LOG"
	QRC=${PIPESTATUS[0]}
else
	# Two UDP ports on the host's loopback, one per guest's NIC; each
	# QEMU sends its frames to the other's.
	free_udp() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
	PS=$(free_udp) PC=$(free_udp)
	[ "$PS" != "$PC" ] || PC=$((PS + 1))
	guest() { # guest ROLE MAC LOCALPORT REMOTEPORT
		timeout "$TMO" "${QEMU[@]}" -append "console=ttyS0 panic=-1 loglevel=4 vmtest.role=$1" \
			-netdev "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$3,remote.type=inet,remote.host=127.0.0.1,remote.port=$4" \
			-device "virtio-net-pci,netdev=n0,mac=$2" </dev/null 2>&1 | tr -d '\r' | sed -u "s/^/[$1] /" | tee "$RUN/console-$1.log"
		return "${PIPESTATUS[0]}"
	}
	say "two guests: server $PAIR_SERVER (udp $PS), client $PAIR_CLIENT (udp $PC)"
	guest server 52:54:00:78:00:01 "$PS" "$PC" &
	SPID=$!
	guest client 52:54:00:78:00:02 "$PC" "$PS" &
	CPID=$!
	wait "$SPID"; SRC=$?
	wait "$CPID"; CRC=$?
	QRC=$SRC
	[ "$QRC" = 0 ] && QRC=$CRC
	cat "$RUN/console-server.log" "$RUN/console-client.log" >"$LOG"
fi
set -e
cp "$LOG" "$W/console.log.$$" && mv "$W/console.log.$$" "$W/console.log"
step ""

# ---- verdict ------------------------------------------------------------------
echo
say "results (console: $W/console.log)"
grep -E '^(\[[a-z]+\] )?VMTEST_RESULT ' "$LOG" | sed -E 's/^(\[[a-z]+\] )?VMTEST_RESULT /  \1/' >&2 || true
grep -E '^(Benchmark|ibv_reg_mr\+ibv_dereg_mr|ibv_post_send\+ibv_poll_cq)' "$LOG" | sed 's/^/  bench: /' >&2 || true
say "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "total %.1f s", b-a}')"
rc=0
if [ "$QRC" = 124 ]; then
	say "FAIL: a guest ran out of time (${TMO}s)"
	rc=1
elif [ -n "$PAIR" ]; then
	# Each guest's lines carry its role: both must pass.
	for r in server client; do
		f=$RUN/console-$r.log
		if ! grep -q "^\[$r\] VMTEST_BOOTED" "$f"; then
			say "FAIL: the $r guest did not boot"
			rc=1
		elif ! grep -q "^\[$r\] VMTEST_RC=0$" "$f"; then
			say "FAIL: the $r guest: $(grep -c 'VMTEST_RESULT .*FAIL' "$f") step(s) failed, or it stopped before the end of its script"
			rc=1
		fi
	done
elif ! grep -q "VMTEST_BOOTED" "$LOG"; then
	say "FAIL: the guest did not boot (qemu exit $QRC)"
	rc=1
elif ! grep -q '^VMTEST_RC=' "$LOG"; then
	say "FAIL: the guest stopped before the end of its script (qemu exit $QRC)"
	rc=1
elif ! grep -q '^VMTEST_RC=0$' "$LOG"; then
	say "FAIL: $(grep -c '^VMTEST_RESULT .*FAIL' "$LOG") guest step(s) failed"
	rc=1
fi
if [ "$BUILD_FAILED" = 1 ]; then
	say "FAIL: a test binary or the C benchmark did not build"
	rc=1
fi
[ "$rc" = 0 ] && say "PASS"
exit "$rc"
