#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/test-proxy-tap.sh: ncm-proxy end to end over a TAP in a private netns (no USB): SOCKS by address and name, auth, the connection cap, a stalled reader, -L/-R, setup errors. Prints TAP.
# usage: test-proxy-tap.sh NCM_PROXY DNS_ANSWER SOCKS_UDP; re-runs itself under unshare -n.
set -u

PROXY=$1
DNS=$2
UDP=$3
if [ -z "${PROXY_TAP_INNER:-}" ]; then
	why=
	for t in unshare curl busybox ip md5sum python3 ss; do
		command -v "$t" >/dev/null 2>&1 || why="no $t"
	done
	[ -n "$why" ] || unshare -n true 2>/dev/null || why="unshare -n failed (needs root)"
	[ -n "$why" ] || [ -w /dev/net/tun ] || why="no writable /dev/net/tun"
	if [ -n "$why" ]; then
		# CI must run this test, never skip it.
		if [ "${CI:-}" = true ]; then
			echo "1..1"; echo "not ok 1 - CI=true but $why"; exit 1
		fi
		echo "1..0 # SKIP $why"
		exit 0
	fi
	PROXY_TAP_INNER=1 exec unshare -n sh "$0" "$@"
fi

# GLib < 2.76 recycles GSlice blocks between threads under a lock
# ThreadSanitizer cannot see (see test-lwip-tap.c): plain malloc instead.
export G_SLICE=always-malloc
# And as tests/vm/vmtest-tsan.h: only our own accesses are checked, not
# GLib's on our behalf. g_task_return_error() copies a string on the lookup
# thread after ncm-lwip's release annotation, and GTask frees it on the main
# thread: ordered by GLib's own locks, a report in about 1 TSan run of 6.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }ignore_noninstrumented_modules=1"
TMP=$(mktemp -d)
LOG=$TMP/proxy.log
WWW=$TMP/www
SOCKS=127.0.0.1:1080
K4=192.168.93.1 K6=fd93::1 L4=192.168.93.2 L6=fd93::2
n=0
failed=0
pids=

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; sed 's/^/# /' "$LOG" 2>/dev/null | tail -20; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc"; fi; }
md5() { md5sum "$1" | cut -d' ' -f1; }
# Our own processes, by id, and what they forked (httpd serves each client
# from a child, which would hold our stdout while its peer is gone).
cleanup() {
	for p in $pids; do
		pkill -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bg() { "$@" & pids="$pids $!"; }

wait_until() { # TENTHS CMD...: polls CMD
	t=$1; shift
	while [ "$t" -gt 0 ]; do "$@" && return 0; sleep 0.1; t=$((t - 1)); done
	return 1
}

taps=0
start_proxy() { # ARGS...: ncm-proxy on a TAP with addresses on both sides
	# A new name each time: the last one's TAP may still be going away.
	tap=pxt$taps
	taps=$((taps + 1))
	# Emptied here: the background job truncates it only once it runs, and
	# the last run's "running on" must not be read as this one's.
	: >"$LOG"
	# PROXY_V4= for a link with IPv6 alone, PROXY_DNS for another server.
	"$PROXY" --tap "$tap" ${PROXY_V4---ipv4 $L4/24} --ipv6 "$L6/64" --no-dad \
		--dns "${PROXY_DNS:-$K4}" "$@" >>"$LOG" 2>&1 &
	PID=$!
	wait_until 100 grep -q "running on" "$LOG" || return 1
	ip addr add "$K4/24" dev "$tap" && ip -6 addr add "$K6/64" dev "$tap" nodad &&
		ip link set "$tap" up
}

stop_proxy() { # exit status of ncm-proxy after SIGTERM
	kill -TERM "$PID"
	wait "$PID"
}

stop_proxy_within() { # SECS: as stop_proxy, but SIGKILL and fail if it takes longer
	kill -TERM "$PID"
	# A zombie still answers kill -0: gone, or its state Z.
	if ! wait_until "$(($1 * 10))" sh -c "[ ! -e /proc/$PID ] || [ \"\$(awk '{print \$3}' /proc/$PID/stat 2>/dev/null)\" = Z ]"; then
		kill -KILL "$PID"
		wait "$PID"
		return 1
	fi
	wait "$PID"
}

stats() { # prints the statistics after SIGUSR1
	: >"$TMP/mark"
	kill -USR1 "$PID"
	wait_until 50 grep -q "relayed" "$LOG"
	grep -A3 "connection(s) open" "$LOG" | tail -4
}

fetch() { # URL [CURL ARGS...]: into $TMP/out
	url=$1; shift
	rm -f "$TMP/out"
	curl -sS --max-time 30 --socks5-hostname "$SOCKS" "$@" -o "$TMP/out" "$url" 2>"$TMP/curl.err"
}

same_as() { [ -f "$TMP/out" ] && [ "$(md5 "$TMP/out")" = "$(md5 "$WWW/$1")" ]; }

ip link set lo up
mkdir -p "$WWW"
head -c 3000000 /dev/urandom >"$WWW/file"
head -c 64000000 /dev/urandom >"$WWW/huge"
head -c 16000000 /dev/urandom >"$TMP/upfile"

start_proxy -L "8081:$K4:8080" -L "8082:[$K6]:8080" -L "8083:$K4:9000" -R "8090:127.0.0.1:8091" \
	-L "8084:$K4:9001" -R "8092:127.0.0.1:8093" ||
	{ echo "Bail out! ncm-proxy did not start"; cat "$LOG"; exit 1; }
bg busybox httpd -f -p 8080 -h "$WWW" >/dev/null 2>&1
bg busybox httpd -f -p 127.0.0.1:8091 -h "$WWW" >/dev/null 2>&1
bg "$DNS" "$K4" "peer.test=$K4" "six.test=$K6" >"$TMP/dns.log"
bg "$UDP" echo "$K4" 7007 >/dev/null
bg "$UDP" echo "$K6" 7007 >/dev/null
wait_until 50 curl -s -o /dev/null "http://$K4:8080/file" || echo "# httpd did not answer"

fetch "http://$K4:8080/file"; check "SOCKS to an IPv4 address" same_as file
fetch "http://[$K6]:8080/file"; check "SOCKS to an IPv6 address" same_as file
fetch "http://peer.test:8080/file"; check "SOCKS to a name (A), resolved through the device" same_as file
fetch "http://six.test:8080/file"; check "SOCKS to a name with only AAAA" same_as file
# Link-local peers, as on Apple's NCM links: the zone a client names is
# dropped (lwIP has one netif), with or without one.
link_local() { ip -6 addr show dev pxt0 scope link | awk '/inet6/ && !/tentative/ { sub("/.*", "", $2); print $2 }'; }
wait_until 50 sh -c "[ -n \"\$(ip -6 addr show dev pxt0 scope link | grep -v tentative | grep inet6)\" ]"
LL=$(link_local)
# curl sends link-local literals without their zone (ATYP 4): by hand, as a
# name (ATYP 3) with the zone, then an HTTP request on the same connection.
zoned() {
	name="$LL%pxt0"
	printf "\\005\\001\\000\\005\\001\\000\\003\\$(printf %03o ${#name})%s\\037\\220GET /file HTTP/1.0\\r\\n\\r\\n" \
		"$name" | busybox nc 127.0.0.1 1080 2>/dev/null | grep -a -q "200 OK"
}
check "SOCKS to a link-local peer named with a zone ($LL%pxt0)" zoned
fetch "http://[$LL]:8080/file"; check "SOCKS to a link-local peer without a zone" same_as file
fetch "http://nope.test:8080/file"
check "an unknown name: SOCKS reply 4 (host unreachable)" grep -q "(4)" "$TMP/curl.err"
fetch "http://$K4:8099/"
check "a refused port: SOCKS reply 5 (connection refused)" grep -q "(5)" "$TMP/curl.err"
rm -f "$TMP/out"; curl -sS --max-time 30 -o "$TMP/out" "http://127.0.0.1:8081/file"
check "-L to an IPv4 address" same_as file
rm -f "$TMP/out"; curl -sS --max-time 30 -o "$TMP/out" "http://127.0.0.1:8082/file"
check "-L to an IPv6 address" same_as file
# 16 MB up, past lwIP's 1 MiB send buffer: the relay waits for room over
# and over (its writability source), and the FIN follows the last byte.
upload() {
	rm -f "$TMP/up"
	busybox nc -l -p 9000 >"$TMP/up" 2>/dev/null &
	srv=$!
	sleep 0.3
	python3 - "$TMP/upfile" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", 8083), timeout=60)
s.sendall(open(sys.argv[1], "rb").read())
s.shutdown(socket.SHUT_WR)
s.recv(1)
EOF
	if ! wait_until 100 sh -c "! kill -0 $srv 2>/dev/null"; then
		kill "$srv"
		return 1
	fi
	[ "$(md5 "$TMP/up")" = "$(md5 "$TMP/upfile")" ]
}
check "-L upload: 16 MB arrive whole and in order, then the FIN" upload
rm -f "$TMP/out"; curl -sS --max-time 30 -o "$TMP/out" "http://$L4:8090/file"
check "-R: the device side reaches a host-only server" same_as file

# How a TCP stream ended for its reader: "eof", "reset" or "timeout", and
# the bytes read (after a "connected" line for a client). tcp_end connect
# HOST PORT [SEND]: as a client, which
# sends SEND first ("|" for CRLF); connect-slow: reading 4 kB each 50 ms;
# tcp_end serve-reset HOST PORT BYTES: a server that sends BYTES, then
# resets the connection (SO_LINGER 0).
tcp_end() {
	python3 - "$@" <<'EOF'
import socket, struct, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "serve-reset":
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(1)
    c, _ = srv.accept()
    c.sendall(b"x" * int(sys.argv[4]))
    time.sleep(0.5)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
    sys.exit(0)
s = socket.create_connection((host, port), timeout=20)
got = 0
try:
    if len(sys.argv) > 4:
        s.sendall(sys.argv[4].replace("|", "\r\n").encode())
    print("connected", flush=True)
    while True:
        if mode == "connect-slow":
            time.sleep(0.05)
        b = s.recv(4096 if mode == "connect-slow" else 65536)
        if not b:
            print("eof", got)
            break
        got += len(b)
except ConnectionResetError:
    print("reset", got)
except socket.timeout:
    print("timeout", got)
EOF
}
# The peer resets a download after 100 kB: the client must see a reset,
# not an end of stream (a cut transfer would read as a whole one).
bg tcp_end serve-reset "$K4" 9001 100000
wait_until 50 sh -c "ss -Hltn 'sport = :9001' | grep -q ."
tcp_end connect 127.0.0.1 8084 >"$TMP/end.out"
sed 's/^/# /' "$TMP/end.out"
# Bytes first: a reset with none read would be the dial's failure.
check "-L: the peer's reset mid-stream reaches the client as a reset" \
	grep -q '^reset [1-9]' "$TMP/end.out"
# -R to a local port nobody listens on: the device side's client, which
# already sent its request, sees a reset, not an empty reply.
tcp_end connect "$L4" 8092 "GET / HTTP/1.0" >"$TMP/end.out"
sed 's/^/# /' "$TMP/end.out"
check "-R: a refused local target resets the device side's connection" grep -q '^reset 0' "$TMP/end.out"

udp() { # HOST COUNT [MAX]
	"$UDP" client 127.0.0.1 1080 "$1" 7007 "$2" ${3:-} >"$TMP/udp.out" 2>&1
	rc=$?
	sed 's/^/# /' "$TMP/udp.out"
	return $rc
}
check "UDP ASSOCIATE: 200 datagrams to an IPv4 address, each echo checked" udp "$K4" 200
check "UDP ASSOCIATE: to an IPv6 address" udp "$K6" 50
check "UDP ASSOCIATE: to a name resolved through the device" udp peer.test 50
# Up to 60000 bytes: 41 fragments or more each way, reassembled by lwIP.
check "UDP ASSOCIATE: datagrams of up to 60000 bytes, IPv4" udp "$K4" 6 60000
check "UDP ASSOCIATE: datagrams of up to 60000 bytes, IPv6" udp "$K6" 6 60000

# A client that stops reading holds only its own connection: another
# transfer completes meanwhile, and the proxy's memory stays bounded.
rss0=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
# curl writes into a FIFO nobody opens: at the first data it blocks, reading no more.
mkfifo "$TMP/stall"
bg curl -sS --max-time 60 --socks5 "$SOCKS" -o "$TMP/stall" "http://$K4:8080/huge"
stalled=$!
sleep 2
fetch "http://$K4:8080/file"
check "a transfer completes while another client stalls" same_as file
rss1=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
echo "# RSS ${rss0} kB before the stalled 64 MB transfer, ${rss1} kB during it"
# Under ASan freed memory stays in quarantine, so the other transfer adds too.
check "the stalled transfer is not buffered whole (RSS grew < 32 MB)" [ $((rss1 - rss0)) -lt 32000 ]
# A download under way when ncm-proxy stops is cut: its client sees a reset.
tcp_end connect-slow 127.0.0.1 8081 "GET /huge HTTP/1.0||" >"$TMP/term.out" &
slow=$!
# Connected first: python's start can take over a second beside the
# sanitized tests, and a SIGTERM before it found no listener.
wait_until 100 grep -q '^connected' "$TMP/term.out"
sleep 1
# The stalled relay waits on curl, with data held on both sides: SIGTERM
# ends it at once (a relay on threads of its own has to cancel them).
check "SIGTERM with a relay blocked on a stalled reader: exit 0 within 10 s" stop_proxy_within 10
kill "$stalled" 2>/dev/null
wait "$slow"
sed 's/^/# /' "$TMP/term.out"
check "SIGTERM: a download under way ends with a reset, not an end of stream" \
	grep -q '^reset [1-9]' "$TMP/term.out"

# --max-connections: held handshakes count; one more is closed at once.
start_proxy --max-connections 2 || not_ok "ncm-proxy with --max-connections did not start"
# Two clients that connect and say nothing: each reads a FIFO that stays empty.
mkfifo "$TMP/hold"
for i in 1 2; do
	busybox nc 127.0.0.1 1080 <"$TMP/hold" >/dev/null 2>&1 &
	pids="$pids $!"
done
exec 7>"$TMP/hold"
wait_until 50 sh -c "kill -USR1 $PID; sleep 0.2; grep -q '2 connection(s) open' '$LOG'"
fetch "http://$K4:8080/file"
check "--max-connections 2: a third connection is refused" [ ! -s "$TMP/out" ]
check "... and counted" wait_until 50 sh -c "kill -USR1 $PID; sleep 0.2; grep -q '1 refused' '$LOG'"
check "SIGTERM with connections open: exit 0" stop_proxy
exec 7>&-

# RFC 1929: a login read from a file.
printf 'alice:s3cret\n' >"$TMP/auth"
start_proxy --auth "$TMP/auth" || not_ok "ncm-proxy with --auth did not start"
fetch "http://$K4:8080/file" --proxy-user alice:s3cret
check "--auth: the right login passes" same_as file
fetch "http://$K4:8080/file" --proxy-user alice:wrong
check "--auth: a wrong password is refused" [ ! -s "$TMP/out" ]
fetch "http://$K4:8080/file"
check "--auth: no login is refused" [ ! -s "$TMP/out" ]
check "... both counted" wait_until 50 sh -c "kill -USR1 $PID; sleep 0.2; grep -q '1 logins' '$LOG'"
stop_proxy

# A link with IPv6 alone (an iPad's, SLAAC only): a name with an A and an
# AAAA record is reached over IPv6 once its A record finds no route (before:
# SOCKS reply 3, network unreachable).
PROXY_V4= PROXY_DNS=$K6 start_proxy || not_ok "ncm-proxy with IPv6 alone did not start"
# After the TAP: it binds to the kernel side's address there.
bg "$DNS" "$K6" "both.test=$K4" "both.test=$K6" >"$TMP/dns6.log"
sleep 0.3
fetch "http://both.test:8080/file"
check "IPv6 alone: a name with A and AAAA records, reached by its AAAA" same_as file
sed 's/^/# /' "$TMP/curl.err"
fetch "http://$K4:8080/file"
check "... an IPv4 literal still fails with reply 3 (network unreachable)" grep -q "(3)" "$TMP/curl.err"
stop_proxy

# Setup errors: exit 2 with a message that says what to do.
"$PROXY" --tap pxe0 --socks 0.0.0.0:1081 >"$LOG" 2>&1
check "SOCKS beyond loopback without --auth: exit 2, says --auth" \
	sh -c "[ $? = 2 ] && grep -q -- '--auth' '$LOG'"
bg busybox nc -l -p 1082 127.0.0.1 >/dev/null 2>&1
sleep 0.3
"$PROXY" --tap pxe1 --socks 127.0.0.1:1082 >"$LOG" 2>&1
check "SOCKS port in use: exit 2, says so" sh -c "[ $? = 2 ] && grep -q 'in use' '$LOG'"
"$PROXY" --tap pxe2 --ipv6 fd00::2/48 >"$LOG" 2>&1
check "--ipv6 with a prefix other than /64: exit 2, says /64" \
	sh -c "[ $? = 2 ] && grep -q 'fd00::2/64' '$LOG'"
"$PROXY" --usb-fd 0 --apple-switch </dev/null >"$LOG" 2>&1
check "--apple-switch with --usb-fd: exit 2, says the fd would not follow" \
	sh -c "[ $? = 2 ] && grep -q 'cannot be combined with --usb-fd' '$LOG'"
echo "1..$n"
exit $failed
