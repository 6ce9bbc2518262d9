# shellcheck shell=bash
# tunless network-namespace lab: reusable topologies for integration tests, the demo and bench.
# Source it, then:  lab_init tl$$ ; lab_host_pair  (or lab_gateway [; lab_add_roadwarrior])
#
# (a) lab_host_pair                         host tunnel, host to host
#
#     ${P}-a                                   ${P}-b
#     veth-a 10.99.0.1/24 fd99::1/64 <──veth──> veth-b 10.99.0.2/24 fd99::2/64
#
# (b) lab_gateway                           site to site, plus road warriors on the WAN
#
#   ${P}-client        ${P}-gwa                    ${P}-wan                 ${P}-gwb            ${P}-server
#   eth0 10.1.0.2 ── lan-a 10.1.0.1    wan-a 10.99.0.1 ─ p-gwa ┐      ┌ p-gwb ─ wan-b 10.99.0.2   lan-b 10.2.0.1 ── eth0 10.2.0.2
#        fd01::2         fd01::1             fd99::1           br-wan           fd99::2          fd02::1           fd02::2
#   default via                                                  │                                                 default via
#   10.1.0.1/fd01::1                                  p-rw ──────┘  (lab_add_roadwarrior)                          10.2.0.1/fd02::1
#                                                      │
#                                                  ${P}-rw  wan-rw 10.99.0.3/24 fd99::3/64
#
#   All prefixes are /24 and /64. gwa and gwb forward (ip_forward, ipv6 forwarding): the kernel
#   forwards whatever XDP passes. There is NO route between the two LANs unless a test asks for
#   one with lab_gateway_routes (plain kernel forwarding, no tunnel): that way a tunnel test
#   can never pass by leaking cleartext across the WAN.
#
# Every command run through lab_exec / lab_bg sees a private /run/wireguard (a bind mount of
# $LAB_DIR/<ns>/wireguard), so `wg show wg0` inside a namespace talks to that namespace's
# daemon (wireguard-go, boringtun, tunless UAPI) and parallel runs never collide.
#
# Functions
#   lab_init <prefix>            new lab, unique prefix (e.g. tl$$); installs the EXIT/INT/TERM trap
#   lab_host_pair                topology (a)
#   lab_gateway                  topology (b) (always builds the ${P}-wan bridge namespace)
#   lab_gateway_routes           LAN-to-LAN routes over the WAN in gwa/gwb (kernel only, no tunnel)
#   lab_add_roadwarrior [name] [v4] [v6]   namespace ${P}-<name> (default rw, 10.99.0.3, fd99::3) on br-wan
#   lab_roam <ns> <new-ip>[/len] change a namespace's WAN address (same family is replaced)
#   lab_ns <ns>                  full namespace name (a -> ${P}-a; full names pass through)
#   lab_exec <ns> cmd...         run in a namespace (foreground)
#   lab_bg <ns> <logfile> cmd... run in background, stdout+stderr to logfile; pid in LAB_LAST_PID
#   lab_wait_ping <ns> <ip> [timeout_s=10]   wait until ip answers ping from ns
#   lab_wait_for <timeout_s> cmd...          wait until cmd succeeds
#   lab_lan_driver <config>...   with TL_LAN_DRIVER set (packet, af_xdp): each host-mode
#                                config gets ports.lan.driver
#   lab_wan_driver <config>...   with TL_WAN_DRIVER set (e.g. udp): each tunless config's WAN
#                                port becomes that kind, so a test runs over it unchanged
#   lab_on_cleanup <shell-cmd>   run this first when the lab is torn down
#   lab_cleanup                  kill every process in the lab namespaces, delete them (idempotent)
#   lab_leftovers [prefix]       print namespaces still named <prefix>-* (empty when clean)
# Safe under `set -euo pipefail` as well as without it.
# Variables: LAB_P (prefix), LAB_DIR (scratch dir, removed at cleanup unless LAB_KEEP=1),
#            LAB_NAMESPACES (created namespaces), LAB_PIDS (lab_bg pids).

LAB_P=
LAB_DIR=
LAB_NAMESPACES=()
LAB_PIDS=()
LAB_HOOKS=()
LAB_LAST_PID=

lab_log() { printf '[lab %s] %s\n' "${LAB_P:-?}" "$*" >&2; }
lab_die() { lab_log "error: $*"; exit 1; }

lab_init() {
	local prefix=${1:?lab_init <prefix>}
	[ "$(id -u)" -eq 0 ] || lab_die "the lab needs root (network namespaces)"
	[[ $prefix =~ ^[A-Za-z0-9_]{1,12}$ ]] || lab_die "prefix '$prefix': 1-12 chars [A-Za-z0-9_]"
	command -v ip >/dev/null || lab_die "iproute2 'ip' not found"
	LAB_P=$prefix
	LAB_NAMESPACES=()
	LAB_PIDS=()
	LAB_HOOKS=()
	# A leftover run with the same prefix (e.g. a reused pid) is ours to remove.
	local ns
	for ns in $(lab_leftovers "$LAB_P"); do lab_ns_delete "$ns"; done
	LAB_DIR=$(mktemp -d "/tmp/lab-$LAB_P.XXXXXX")
	mkdir -p /run/wireguard
	trap 'lab_cleanup' EXIT
	trap 'lab_cleanup; trap - INT; kill -INT $$' INT
	trap 'lab_cleanup; trap - TERM; kill -TERM $$' TERM
}

lab_ns() {
	case $1 in
	"$LAB_P"-*) printf '%s\n' "$1" ;;
	*) printf '%s-%s\n' "$LAB_P" "$1" ;;
	esac
}

lab_leftovers() {
	local p=${1:-$LAB_P}
	ip netns list 2>/dev/null | awk -v p="$p-" 'index($1, p) == 1 { print $1 }'
}

# Raw exec without the private /run/wireguard mount (used while building topologies).
lab_nsexec() {
	local ns
	ns=$(lab_ns "$1")
	shift
	ip netns exec "$ns" "$@"
}

lab_exec() {
	local ns
	ns=$(lab_ns "${1:?lab_exec <ns> cmd...}")
	shift
	mkdir -p "$LAB_DIR/$ns/wireguard"
	# ip netns exec already runs us in a fresh mount namespace (slave to the host's),
	# so this bind mount is private to the command.
	ip netns exec "$ns" sh -c 'mount --bind "$0" /run/wireguard && exec "$@"' \
		"$LAB_DIR/$ns/wireguard" "$@"
}

lab_bg() {
	local ns=${1:?lab_bg <ns> <logfile> cmd...} log=${2:?lab_bg <ns> <logfile> cmd...}
	shift 2
	lab_exec "$ns" "$@" >"$log" 2>&1 </dev/null &
	LAB_LAST_PID=$!
	LAB_PIDS+=("$LAB_LAST_PID")
}

lab_on_cleanup() { LAB_HOOKS+=("$1"); }

lab_ns_add() {
	local ns
	ns=$(lab_ns "$1")
	ip netns add "$ns" || lab_die "ip netns add $ns"
	LAB_NAMESPACES+=("$ns")
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
		net.ipv6.conf.default.disable_ipv6=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.all.dad_transmits=0 net.ipv6.conf.default.dad_transmits=0 \
		net.ipv6.conf.default.accept_ra=0 >/dev/null
}

lab_forwarding() {
	ip netns exec "$(lab_ns "$1")" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 >/dev/null
}

# lab_veth <ns1> <if1> <ns2> <if2>
lab_veth() {
	local n1 n2
	n1=$(lab_ns "$1")
	n2=$(lab_ns "$3")
	ip link add "$2" netns "$n1" type veth peer name "$4" netns "$n2" ||
		lab_die "veth $1:$2 <-> $3:$4"
	ip -n "$n1" link set "$2" up
	ip -n "$n2" link set "$4" up
}

# lab_addr <ns> <if> <v4/len> <v6/len>
lab_addr() {
	local ns
	ns=$(lab_ns "$1")
	ip -n "$ns" addr add "$3" dev "$2"
	ip -n "$ns" -6 addr add "$4" dev "$2" nodad
}

lab_host_pair() {
	lab_ns_add a
	lab_ns_add b
	lab_veth a veth-a b veth-b
	lab_addr a veth-a 10.99.0.1/24 fd99::1/64
	lab_addr b veth-b 10.99.0.2/24 fd99::2/64
}

lab_wan_bridge() {
	local wan
	wan=$(lab_ns wan)
	ip netns list | awk '{print $1}' | grep -qx "$wan" && return 0
	lab_ns_add wan
	ip -n "$wan" link add br-wan type bridge forward_delay 0 stp_state 0 mcast_snooping 0
	ip netns exec "$wan" sysctl -qw net.ipv6.conf.br-wan.disable_ipv6=1 >/dev/null
	ip -n "$wan" link set br-wan up
}

# lab_wan_attach <ns> <ifname> <v4/len> <v6/len>: veth from ns to br-wan (bridge port p-<ns>).
lab_wan_attach() {
	local short=${1#"$LAB_P"-}
	local port="p-$short"
	[ ${#port} -le 15 ] || lab_die "bridge port name '$port' too long"
	lab_wan_bridge
	lab_veth "$1" "$2" wan "$port"
	ip -n "$(lab_ns wan)" link set "$port" master br-wan
	lab_addr "$1" "$2" "$3" "$4"
}

lab_gateway() {
	local ns
	for ns in client gwa gwb server; do lab_ns_add "$ns"; done
	lab_forwarding gwa
	lab_forwarding gwb
	lab_veth client eth0 gwa lan-a
	lab_addr client eth0 10.1.0.2/24 fd01::2/64
	lab_addr gwa lan-a 10.1.0.1/24 fd01::1/64
	lab_wan_attach gwa wan-a 10.99.0.1/24 fd99::1/64
	lab_wan_attach gwb wan-b 10.99.0.2/24 fd99::2/64
	lab_veth gwb lan-b server eth0
	lab_addr gwb lan-b 10.2.0.1/24 fd02::1/64
	lab_addr server eth0 10.2.0.2/24 fd02::2/64
	ip -n "$(lab_ns client)" route add default via 10.1.0.1
	ip -n "$(lab_ns client)" -6 route add default via fd01::1
	ip -n "$(lab_ns server)" route add default via 10.2.0.1
	ip -n "$(lab_ns server)" -6 route add default via fd02::1
}

# Plain kernel routes between the LANs over the WAN (no tunnel): for lab sanity tests only.
lab_gateway_routes() {
	ip -n "$(lab_ns gwa)" route replace 10.2.0.0/24 via 10.99.0.2
	ip -n "$(lab_ns gwa)" -6 route replace fd02::/64 via fd99::2
	ip -n "$(lab_ns gwb)" route replace 10.1.0.0/24 via 10.99.0.1
	ip -n "$(lab_ns gwb)" -6 route replace fd01::/64 via fd99::1
}

lab_add_roadwarrior() {
	local name=${1:-rw} v4=${2:-10.99.0.3} v6=${3:-fd99::3}
	[ ${#name} -le 11 ] || lab_die "roadwarrior name '$name' too long"
	lab_ns_add "$name"
	lab_wan_attach "$name" "wan-$name" "$v4/24" "$v6/64"
}

# lab_roam <ns> <new-ip>[/len]: replace the namespace's WAN address of that family.
lab_roam() {
	local ns ip=${2:?lab_roam <ns> <new-ip>} dev fam len
	ns=$(lab_ns "$1")
	dev=$(ip -n "$ns" -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2; exit }')
	[ -n "$dev" ] || lab_die "lab_roam: no interface in $ns"
	case $ip in *:*) fam=-6 len=64 ;; *) fam=-4 len=24 ;; esac
	case $ip in */*) ;; *) ip=$ip/$len ;; esac
	ip -n "$ns" $fam addr flush dev "$dev" scope global
	if [ $fam = -6 ]; then
		ip -n "$ns" -6 addr add "$ip" dev "$dev" nodad
	else
		ip -n "$ns" addr add "$ip" dev "$dev"
	fi
}

lab_lan_driver() {
	local f
	[ -n "${TL_LAN_DRIVER:-}" ] || return 0
	for f in "$@"; do
		sed -i -e "s/^\( *\)wan: {iface: .*/&\n\1lan: {driver: $TL_LAN_DRIVER}/" "$f" || return 1
		grep -q "lan: {driver: $TL_LAN_DRIVER}" "$f" || { echo "lab_lan_driver: no WAN port in $f" >&2; return 1; }
	done
}

lab_wan_driver() {
	local f
	[ -n "${TL_WAN_DRIVER:-}" ] || return 0
	for f in "$@"; do
		sed -i -e "s/^\( *wan: {iface: [^,}]*\)/\1, driver: $TL_WAN_DRIVER/" "$f" || return 1
		grep -q "driver: $TL_WAN_DRIVER" "$f" || { echo "lab_wan_driver: no WAN port in $f" >&2; return 1; }
	done
}

lab_wait_for() {
	local timeout=${1:?lab_wait_for <timeout_s> cmd...} end
	shift
	end=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

lab_wait_ping() {
	local ns=${1:?lab_wait_ping <ns> <ip> [timeout]} ip=${2:?lab_wait_ping <ns> <ip> [timeout]}
	lab_wait_for "${3:-10}" ip netns exec "$(lab_ns "$ns")" ping -c 1 -W 1 -q "$ip"
}

lab_ns_delete() {
	local ns=$1 pids p i
	ip netns list | awk '{print $1}' | grep -qx "$ns" || return 0
	pids=$(ip netns pids "$ns" 2>/dev/null) || true
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086
		kill -TERM $pids 2>/dev/null || true
		for i in $(seq 1 30); do
			pids=$(ip netns pids "$ns" 2>/dev/null) || true
			[ -n "$pids" ] || break
			sleep 0.1
		done
		for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
	fi
	ip netns del "$ns" 2>/dev/null || true
}

lab_cleanup() {
	local rc=$? h p ns i
	[ -n "$LAB_P" ] || return $rc
	for h in "${LAB_HOOKS[@]}"; do eval "$h" || true; done
	LAB_HOOKS=()
	for p in "${LAB_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for ((i = ${#LAB_NAMESPACES[@]} - 1; i >= 0; i--)); do lab_ns_delete "${LAB_NAMESPACES[i]}"; done
	for ns in $(lab_leftovers "$LAB_P"); do lab_ns_delete "$ns"; done
	for p in "${LAB_PIDS[@]}"; do
		for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	LAB_PIDS=()
	LAB_NAMESPACES=()
	if [ -n "$LAB_DIR" ] && [ -z "${LAB_KEEP:-}" ]; then rm -rf "$LAB_DIR"; fi
	return $rc
}
