# shellcheck shell=bash
# bench/run.sh's implementations: how each VPN is brought up in the gateway lab
# (tests/integration/lab.sh lab_gateway), each in fresh namespaces. Sourced by bench/run.sh.
# The userspace WireGuard VPNs over TUN (wireguard-go, wggo-ts: Tailscale's fork of it, boringtun)
# are started and named as bench/tunvpn.sh says.
#
#   client 10.1.0.2 ── lan-a [gwa] wan-a 10.99.0.1 ── wan (br-wan or tl-delayline) ── wan-b 10.99.0.2 [gwb] lan-b ── 10.2.0.2 server
#   tunnel addresses 10.77.0.1 (gwa) <-> 10.77.0.2 (gwb); LAN routes 10.1.0.0/24 <-> 10.2.0.0/24
#
#   impl_up <impl> <mode>   mode host: the tunnel between gwa and gwb (10.77.0.x) only
#                           (tunless: configs/host-{a,b}.yaml on the WAN veths);
#                           mode gateway (tunless) / tun (the others): plus the LANs (kernel-TUN
#                           VPNs route them into their TUN device, which also has 10.77.0.x;
#                           tunless runs configs/gateway-{a,b}.yaml with the WAN shaper at
#                           $RATE Mbit/s on gwa)
#                           mode fwd-<wan>-<lan> (tunless): configs/gateway-{a,b}.yaml with those
#                           port kinds and no shaper (the gateway scenario)
#   impl_lab_gateway             the gateway lab as the bench runs it (after lab_init)
#   impl_gateway_gro             GRO on the gateways' LAN and WAN veths (a NIC's default)
#   impl_gateway_lab <wan>       the gateway scenario's veths as a NIC-backed gateway has them
#                                (GRO, TX offload where no AF_XDP port receives; BENCH_GW_LAB)
#   impl_gateway_lab_undo        back to impl_lab_gateway's settings (what impl_gateway_lab changed)
#   impl_gateway_features        one line per veth of the path: GRO, TX checksum, TSO, UDP GSO, on or off
#   impl_txqueuelen <impl> <n>   set the TUN device's txqueuelen on both gateways
#   impl_tun_dev <impl>          the TUN device name (wg0, tun0), empty for tunless
#   impl_version <impl>          one line
#   impl_available <impl>        0 if it can run here; else prints why not
#   IMPL_TUNLESS                 the two tunless instance names (for telemetry), when up

IMPL_TUNLESS=()

mac() { lab_nsexec "$1" cat "/sys/class/net/$2/address"; }

# tests/integration/lab.sh's lab_gateway, and: frames into AF_XDP ports and the delay line must
# carry complete checksums (TX checksum offload off on every veth of the path; impl_gateway_lab
# turns it on again where neither receives what the veth sends); static
# neighbours on the LANs (no ARP in the packet counts of the no-drop matrix).
impl_lab_gateway() {
	local x
	lab_gateway
	for x in client:eth0 server:eth0 gwa:wan-a gwb:wan-b gwa:lan-a gwb:lan-b; do
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx off >/dev/null
	done
	lab_nsexec client ip neigh replace 10.1.0.1 lladdr "$(mac gwa lan-a)" dev eth0 nud permanent
	lab_nsexec gwa ip neigh replace 10.1.0.2 lladdr "$(mac client eth0)" dev lan-a nud permanent
	lab_nsexec server ip neigh replace 10.2.0.1 lladdr "$(mac gwb lan-b)" dev eth0 nud permanent
	lab_nsexec gwb ip neigh replace 10.2.0.2 lladdr "$(mac server eth0)" dev lan-b nud permanent
	lab_wait_ping gwa 10.99.0.2 5
}

# impl_gateway_gro: GRO on the gateways' four ports (lan-a, wan-a, lan-b, wan-b), as every
# physical NIC driver does by default (NAPI GRO); a veth does none unless asked (it then polls
# with NAPI). Without it a kernel-TUN VPN's gateway gets every forwarded LAN packet on its own:
# the TUN hands it one 1420-byte packet per read instead of a TSO super-packet, and its WAN
# socket's UDP_GRO coalesces nothing. AF_XDP ports run their XDP program before GRO, so they see
# the same frames either way. impl_gateway_lab sets the same (BENCH_GW_LAB gro; nic: more).
impl_gateway_gro() {
	local x
	for x in gwa:lan-a gwa:wan-a gwb:lan-b gwb:wan-b; do
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" gro on >/dev/null || return 1
	done
}

# impl_gateway_lab <wan>: the veths of the gateway scenario's path set as BENCH_GW_LAB says; <wan>
# is what the gateways' WAN ports are: af_xdp or udp (tunless's port kind) or tun (a kernel-TUN
# VPN, whose WAN is a kernel UDP socket). BENCH_GW_LAB:
#   nic (default)  as a gateway with physical NICs has them by default: GRO on the gateways' four
#                  ports and on the client's and server's eth0 (every NIC driver receives through
#                  NAPI GRO); TX offload (tx-checksumming, and with it TSO and UDP segmentation)
#                  on each gateway port whose frames reach no AF_XDP port: lan-a and lan-b always
#                  (what the gateway's kernel sends there, the client's and the server's kernels
#                  receive), wan-a and wan-b unless the WAN is tunless's af_xdp (each feeds the
#                  other gateway's AF_XDP port, which must get complete checksums and frames no
#                  larger than the MTU). The client's and server's eth0 keep TX offload off
#                  (impl_lab_gateway): they feed tunless's AF_XDP LAN ports, and their MTU-sized
#                  frames are what crosses a wire, for every VPN alike.
#   gro            GRO on the gateways' four ports only (impl_gateway_gro; the lab of the first
#                  comparison of docs/results/2026-11-26-gateway-baseline.md)
#   off            impl_lab_gateway's lab as it is: no GRO, TX offload off on every veth (the lab
#                  before 2026-11-26); BENCH_GW_GRO=0 means this too
# A veth's TX offload matters for what its own kernel sends (tunless's AF_XDP sends carry their
# checksums whole, so its ports send the same frames either way); GRO for what it receives, after
# the XDP program of an AF_XDP port (which sees the frames as before).
IMPL_GW_UNDO=()
impl_gateway_lab_kind() {
	local lab=${BENCH_GW_LAB:-nic}
	[ "${BENCH_GW_GRO:-1}" != 0 ] || lab=off
	echo "$lab"
}
impl_gateway_lab() {
	local lab x gro=() tx=()
	lab=$(impl_gateway_lab_kind)
	IMPL_GW_UNDO=()
	case $1 in af_xdp | udp | tun) ;; *) bench_say "impl_gateway_lab: WAN '$1' is not af_xdp, udp or tun"; return 1 ;; esac
	case $lab in
	off) return 0 ;;
	gro) gro=(gwa:lan-a gwa:wan-a gwb:lan-b gwb:wan-b) ;;
	nic)
		gro=(gwa:lan-a gwa:wan-a gwb:lan-b gwb:wan-b client:eth0 server:eth0)
		tx=(gwa:lan-a gwb:lan-b)
		[ "$1" = af_xdp ] || tx+=(gwa:wan-a gwb:wan-b)
		;;
	*) bench_say "BENCH_GW_LAB: '$lab' is not nic, gro or off"; return 1 ;;
	esac
	for x in "${gro[@]}"; do
		lab_nsexec "${x%%:*}" ethtool -k "${x#*:}" | grep -q '^generic-receive-offload: off' &&
			IMPL_GW_UNDO+=("$x gro")
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" gro on >/dev/null || return 1
	done
	for x in "${tx[@]}"; do
		IMPL_GW_UNDO+=("$x tx")
		lab_nsexec "${x%%:*}" ethtool -K "${x#*:}" tx on >/dev/null || return 1
	done
}
impl_gateway_lab_undo() {
	local x ns dev f
	for x in "${IMPL_GW_UNDO[@]}"; do
		read -r ns dev f <<<"${x/:/ }"
		lab_nsexec "$ns" ethtool -K "$dev" "$f" off >/dev/null || return 1
	done
	IMPL_GW_UNDO=()
}
impl_gateway_features() {
	local x
	for x in client:eth0 gwa:lan-a gwa:wan-a gwb:wan-b gwb:lan-b server:eth0; do
		lab_nsexec "${x%%:*}" ethtool -k "${x#*:}" | awk -v d="$x" '
			$1 == "generic-receive-offload:" { g = $2 } $1 == "tx-checksumming:" { t = $2 }
			$1 == "tx-tcp-segmentation:" { s = $2 } $1 == "tx-udp-segmentation:" { u = $2 }
			END { printf "%s gro=%s tx-csum=%s tso=%s tx-udp-seg=%s\n", d, g, t, s, u }'
	done
}

impl_tun_dev() {
	case $1 in
	tunless) echo "" ;;
	openvpn) echo tun0 ;;
	*) echo wg0 ;;
	esac
}

impl_version() {
	case $1 in
	tunless) echo "tunless $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)" ;;
	wireguard-go | wggo-ts | boringtun) tunvpn_version "$1" ;;
	openvpn) openvpn --version 2>/dev/null | head -n 1 | cut -d' ' -f1-2 ;;
	kernel-wg) echo "kernel $(uname -r) wireguard module" ;;
	esac
}

impl_available() {
	local ns e
	case $1 in
	tunless) [ -x "$TUNLESSD" ] || { echo "$TUNLESSD not built (meson setup build && ninja -C build)"; return 1; } ;;
	wireguard-go | wggo-ts | boringtun) tunvpn_available "$1" ;;
	openvpn) command -v openvpn >/dev/null && command -v openssl >/dev/null ||
		{ echo "openvpn/openssl not installed (scripts/setup.sh)"; return 1; } ;;
	kernel-wg)
		ns=tlbench-wgprobe-$$
		ip netns add "$ns" 2>/dev/null || { echo "cannot create a namespace to probe"; return 1; }
		e=$(ip -n "$ns" link add wgprobe type wireguard 2>&1)
		local rc=$?
		ip netns del "$ns" 2>/dev/null
		[ $rc -eq 0 ] || { echo "this kernel has no WireGuard module ('ip link add type wireguard': ${e:-failed})"; return 1; }
		;;
	*) echo "unknown implementation"; return 1 ;;
	esac
}

impl_txqueuelen() {
	local dev ns
	dev=$(impl_tun_dev "$1")
	[ -n "$dev" ] || return 0
	for ns in gwa gwb; do lab_exec "$ns" ip link set "$dev" txqueuelen "$2" || return 1; done
}

# ---- WireGuard over TUN (wireguard-go, wggo-ts, boringtun) and kernel WireGuard ----------------
wg_keys() {
	[ -s "$LAB_DIR/gwa.key" ] && return 0
	(umask 077 && wg genkey >"$LAB_DIR/gwa.key" && wg genkey >"$LAB_DIR/gwb.key")
}

wg_dev_up() { # <impl> <ns>
	case $1 in
	kernel-wg) lab_exec "$2" ip link add wg0 type wireguard || return 1 ;;
	*)
		tunvpn_argv "$1" "$LAB_DIR/$1-$2.out" || return 1
		lab_bg "$2" "$LAB_DIR/$1-$2.log" "${TUNVPN_ARGV[@]}" ;;
	esac
	lab_wait_for 10 lab_exec "$2" wg show wg0
}

wg_up() { # <impl> <mode>
	local impl=$1 mode=$2 me peer lan_me lan_peer tip ptip wip
	wg_keys || return 1
	for me in gwa gwb; do wg_dev_up "$impl" "$me" || { bench_say "$impl: no wg0 in $me"; return 1; }; done
	for me in gwa gwb; do
		if [ $me = gwa ]; then peer=gwb tip=10.77.0.1 ptip=10.77.0.2 wip=10.99.0.2 lan_peer=10.2.0.0/24
		else peer=gwa tip=10.77.0.2 ptip=10.77.0.1 wip=10.99.0.1 lan_peer=10.1.0.0/24; fi
		lab_exec $me wg set wg0 private-key "$LAB_DIR/$me.key" listen-port 51820 \
			peer "$(wg pubkey <"$LAB_DIR/$peer.key")" allowed-ips "$ptip/32,$lan_peer" \
			endpoint "$wip:51820" || return 1
		lab_exec $me ip addr add "$tip/24" dev wg0 || return 1
		lab_exec $me ip link set wg0 mtu 1420 txqueuelen 500 up || return 1
		[ "$mode" = host ] || lab_exec $me ip route add "$lan_peer" dev wg0 || return 1
	done
	lab_wait_ping gwa 10.77.0.2 15
}

# ---- OpenVPN 2.6 over TUN: UDP, AES-256-GCM, TLS with certificates made at run time ------------
ovpn_certs() { # once per run, in $1
	local d=$1 n
	[ -s "$d/client.crt" ] && return 0
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=tlbench-ca -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null || return 1
	for n in server client; do
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$n" \
			-keyout "$d/$n.key" -out "$d/$n.csr" 2>/dev/null &&
			openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
				-CAcreateserial -days 2 -out "$d/$n.crt" 2>/dev/null || return 1
	done
}

ovpn_up() { # <mode>
	local mode=$1 d=$WORK/ovpn me role tip ptip wip lan_peer
	ovpn_certs "$d" || { bench_say "openvpn: certificate generation failed"; return 1; }
	for me in gwa gwb; do
		if [ $me = gwa ]; then role="--tls-client --cert $d/client.crt --key $d/client.key" tip=10.77.0.1 ptip=10.77.0.2 wip=10.99.0.2 lan_peer=10.2.0.0/24
		else role="--tls-server --dh none --cert $d/server.crt --key $d/server.key" tip=10.77.0.2 ptip=10.77.0.1 wip=10.99.0.1 lan_peer=10.1.0.0/24; fi
		# shellcheck disable=SC2086
		lab_bg $me "$LAB_DIR/openvpn-$me.log" openvpn --dev tun0 --dev-type tun --disable-dco \
			--proto udp --port 1194 --remote "$wip" 1194 --ifconfig "$tip" "$ptip" \
			--ca "$d/ca.crt" $role --cipher AES-256-GCM --data-ciphers AES-256-GCM \
			--tun-mtu 1420 --txqueuelen 500 --fast-io --verb 1
	done
	for me in gwa gwb; do
		lab_wait_for 20 lab_exec $me ip link show tun0 || { bench_say "openvpn: no tun0 in $me"; return 1; }
	done
	if [ "$mode" != host ]; then
		lab_exec gwa ip route add 10.2.0.0/24 dev tun0 && lab_exec gwb ip route add 10.1.0.0/24 dev tun0 || return 1
	fi
	lab_wait_ping gwa 10.77.0.2 30
}

# ---- tunless -----------------------------------------------------------------------------------
# The port kinds (ports.*.driver, docs/config.md) the bench writes into tunless's configs: host
# mode (throughput): the WAN a kernel UDP socket with GSO/GRO (`udp`, what `auto` picks on a
# veth, which has no zero-copy AF_XDP), the LAN (the veth tunless creates) an AF_PACKET socket
# with TSO/GRO (`packet`, the default); gateway mode (the LAN scenarios): AF_XDP on both veths
# (copy mode). Each can be changed for a comparison; the configs are kept in DIR/raw/ and
# results.json's settings.tunless_ports names the kinds they gave. The gateway scenario runs
# gateway mode without the shaper once per WAN:LAN pair of TL_FWD_PORTS: by default AF_XDP on
# both, and the kernel's UDP sockets on the WAN with AF_XDP on the LAN; a gateway's LAN can also
# be `packet` (an AF_PACKET socket fed by tc programs on the LAN veth: docs/config.md), e.g.
# BENCH_TUNLESS_FWD_PORTS="udp:af_xdp udp:packet", or BENCH_TUNLESS_GW_LAN=packet for the
# shaped gateway scenarios (bench/throughput.sh -m gateway takes BENCH_TUNLESS_GW_LAN too).
TL_HOST_WAN=${BENCH_TUNLESS_HOST_WAN:-udp}
TL_HOST_LAN=${BENCH_TUNLESS_HOST_LAN:-packet}
TL_GW_WAN=${BENCH_TUNLESS_GW_WAN:-af_xdp}
TL_GW_LAN=${BENCH_TUNLESS_GW_LAN:-af_xdp}
TL_FWD_PORTS=${BENCH_TUNLESS_FWD_PORTS:-af_xdp:af_xdp udp:af_xdp}

tunless_up() { # <mode>: host, gateway (the shaper on gwa's WAN) or fwd-<wan>-<lan> (no shaper)
	local x cfg name wan=$TL_GW_WAN lan=$TL_GW_LAN
	case $1 in
	fwd-*-*) wan=${1#fwd-} && lan=${wan#*-} && wan=${wan%%-*} ;;
	host | gateway) ;;
	*) bench_say "tunless: unknown mode '$1'"; return 1 ;;
	esac
	IMPL_TUNLESS=()
	for x in a b; do
		name=tb$(($$ % 10000))$RUN$x
		cfg=$LAB_DIR/tunless-$x.yaml
		if [ "$1" = host ]; then
			sed -e "s/^name: .*/name: $name/" \
				-e "s/^  wan: {iface: veth-$x}$/  wan: {iface: wan-$x, driver: $TL_HOST_WAN}\n  lan: {driver: $TL_HOST_LAN}/" \
				"$ROOT/configs/host-$x.yaml" >"$cfg"
		else
			sed -e "s/^name: .*/name: $name/" \
				-e "s/^  wan: {iface: wan-$x}$/  wan: {iface: wan-$x, driver: $wan}/" \
				-e "s/^  lan: {iface: lan-$x}$/  lan: {iface: lan-$x, driver: $lan}/" \
				"$ROOT/configs/gateway-$x.yaml" >"$cfg"
		fi
		[ "$(grep -c '^  \(wan\|lan\): {.*driver: ' "$cfg")" = 2 ] ||
			{ bench_say "tunless: could not set the port kinds in $cfg"; return 1; }
		# TL_WORKERS (bench/throughput.sh -w): the workers of each instance
		[ -z "${TL_WORKERS:-}" ] || { sed -i '/^workers:/d' "$cfg" && echo "workers: $TL_WORKERS" >>"$cfg"; }
		IMPL_TUNLESS+=("$name")
		lab_on_cleanup "rm -rf /var/run/dpdk/tunless-$name"
	done
	if [ "$1" = gateway ]; then
		# BENCH_TUNLESS_SHAPER_BURST: the shaper's bucket in bytes (default: 1 ms at R, as tbf's);
		# BENCH_TUNLESS_WAN_AQM: settings of the shaped WAN queue's AQM (e.g. "rtt_us: 200000")
		local aqm=
		[ -z "${BENCH_TUNLESS_WAN_AQM:-}" ] || aqm=", aqm: {$BENCH_TUNLESS_WAN_AQM}"
		sed -i -e "s/^\( *wan: {iface: wan-a, driver: [a-z_]*\)}/\1, shaper: {rate_bps: $((RATE * 1000000))${BENCH_TUNLESS_SHAPER_BURST:+, burst_bytes: $BENCH_TUNLESS_SHAPER_BURST}}$aqm}/" "$LAB_DIR/tunless-a.yaml"
		grep -q "shaper: {rate_bps: $((RATE * 1000000))[,}]" "$LAB_DIR/tunless-a.yaml" ||
			{ bench_say "tunless: could not put the shaper into gateway-a.yaml"; return 1; }
	fi
	for x in a b; do lab_bg "gw$x" "$LAB_DIR/tunless-gw$x.log" "$TUNLESSD" -c "$LAB_DIR/tunless-$x.yaml"; done
	for x in a b; do
		lab_wait_for 30 grep -q ': up:' "$LAB_DIR/tunless-gw$x.log" || {
			bench_say "tunless gw$x did not come up: $(grep -v '^EAL' "$LAB_DIR/tunless-gw$x.log" | tail -n 3)"
			return 1
		}
	done
	# the configs as run (demo keys only): results.json names the port kinds from them
	mkdir -p "$OUTDIR/raw/tunless-$1" && cp "$LAB_DIR"/tunless-[ab].yaml "$OUTDIR/raw/tunless-$1/"
	if [ "$1" = host ]; then lab_wait_ping gwa 10.77.0.2 30; else lab_wait_ping client 10.2.0.2 30; fi
}

impl_up() { # <impl> <mode>
	case $1 in
	tunless) tunless_up "$2" ;;
	openvpn) ovpn_up "$2" ;;
	*) wg_up "$1" "$2" ;;
	esac
}

# The WAN bottleneck of the kernel-TUN VPNs: tbf at $RATE on gwa's WAN with the usual pfifo
# (1000 packets) under it; counted on the wire like tunless's shaper (stab overhead 24).
tun_wan_shaper() {
	lab_exec gwa tc qdisc replace dev wan-a root handle 1: stab overhead 24 linklayer ethernet \
		tbf rate "${RATE}mbit" burst "$(wan_burst)" latency 1s &&
		lab_exec gwa tc qdisc replace dev wan-a parent 1:1 handle 10: pfifo limit 1000
}
