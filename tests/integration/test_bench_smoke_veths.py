"""Used by test_bench_smoke.sh (not a test of its own): what the gateway lab's veths should have.

veths_bad(lines, wan) reads bench/impl.sh impl_gateway_features's lines ("<ns>:<dev> gro=on
tx-csum=off tso=off tx-udp-seg=off", one per veth of the path) and returns what differs from the
lab BENCH_GW_LAB=nic sets for a gateway pair whose WAN ports are `wan` (tun: a kernel-TUN VPN;
af_xdp or udp: tunless's WAN port kind), or from impl_lab_gateway's own lab when wan is "off"
(no GRO, TX offload off everywhere): a list of (veth, feature, have, want), empty when all agree."""

GATEWAY_PORTS = ("gwa:lan-a", "gwa:wan-a", "gwb:wan-b", "gwb:lan-b")
ENDPOINTS = ("client:eth0", "server:eth0")


def expected(wan):
    if wan == "off":
        return {d: {"gro": "off", "tx": "off"} for d in GATEWAY_PORTS + ENDPOINTS}
    want = {d: {"gro": "on", "tx": "on"} for d in GATEWAY_PORTS}
    if wan == "af_xdp":  # each WAN port feeds the other gateway's AF_XDP port
        want["gwa:wan-a"]["tx"] = want["gwb:wan-b"]["tx"] = "off"
    for d in ENDPOINTS:  # they feed tunless's AF_XDP LAN ports, for every VPN alike
        want[d] = {"gro": "on", "tx": "off"}
    return want


def veths_bad(lines, wan):
    have = {}
    for line in lines:
        f = line.split()
        if f:
            have[f[0]] = dict(kv.split("=", 1) for kv in f[1:] if "=" in kv)
    bad = []
    for dev, w in expected(wan).items():
        h = have.get(dev, {})
        feats = {"gro": w["gro"], "tx-csum": w["tx"], "tso": w["tx"], "tx-udp-seg": w["tx"]}
        bad += [(dev, k, h.get(k), v) for k, v in feats.items() if h.get(k) != v]
    return bad
