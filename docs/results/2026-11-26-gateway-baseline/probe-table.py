#!/usr/bin/env python3
"""The path's counters of each probe directory (probe.sh): packets and mean size per device,
drops, the client's retransmits, the server's out-of-order queue, gwa's FragFails."""
import re, sys

def link(f, dev):
    t = open(f).read().split('\n')
    for i, l in enumerate(t):
        if re.match(r'^\d+: %s[:@]' % dev, l):
            rx, tx = t[i + 3].split(), t[i + 7].split()
            return dict(rxb=int(rx[0]), rxp=int(rx[1]), rxd=int(rx[3]), txb=int(tx[0]), txp=int(tx[1]), txd=int(tx[3]))

def nstat(f, k):
    for l in open(f):
        p = l.split()
        if p and p[0] == k:
            return int(p[1])
    return 0

for d in sys.argv[1:]:
    print("== %s" % d)
    for l in open(d + "/summary.txt"):
        print("   " + l.rstrip())
    for ns, dev in (("client", "eth0"), ("gwa", "lan-a"), ("gwa", "wg0"), ("gwb", "wg0"), ("gwb", "lan-b"), ("server", "eth0")):
        a, b = link("%s/link-before-%s.txt" % (d, ns), dev), link("%s/link-after-%s.txt" % (d, ns), dev)
        x = {k: b[k] - a[k] for k in a}
        print("   %-6s %-5s rx %7d pkts mean %6.0f B drop %5d | tx %7d pkts mean %6.0f B drop %5d" % (
            ns, dev, x['rxp'], x['rxb'] / max(1, x['rxp']), x['rxd'], x['txp'], x['txb'] / max(1, x['txp']), x['txd']))
    print("   client TcpRetransSegs %d, gwa IpFragFails %d, server TCPOFOQueue %d, gwb UdpRcvbufErrors %d" % (
        nstat(d + "/nstat-diff-client.txt", "TcpRetransSegs"), nstat(d + "/nstat-diff-gwa.txt", "IpFragFails"),
        nstat(d + "/nstat-diff-server.txt", "TcpExtTCPOFOQueue"), nstat(d + "/nstat-diff-gwb.txt", "UdpRcvbufErrors")))
