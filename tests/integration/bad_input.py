#!/usr/bin/python3
"""Hostile and broken input against a running tunless (driven by test_bad_input.sh).

Runs inside namespace b of the host pair, next to the real peer (a second tunless). Every
case reads /tunless/drops of the tunless under test (A) before and after sending, asserts
that exactly the expected reason grew by exactly the number of packets sent and that no other
reason moved, then checks that the tunnel A <-> B still answers pings.

A small WireGuard initiator written here ("probe", a second peer of A with its own key) gives
legitimate sessions to tamper with: flipped tags, replays, inner sources outside its
allowed IPs. Junk comes from kernel UDP sockets (source ports other than 51820, so the real
peer's XDP program leaves the replies to us) or from scapy frames on veth-b.

  bad_input.py keygen                      -> "<private b64> <public b64>"
  bad_input.py run --ns-a NS --tel-a SOCK --dst-mac MAC --resp-pub B64 --probe-priv B64
                   --peer-if IF [--tel-b SOCK]
Prints "ok ..." / "not ok ..." lines and a final "N passed, N failed".
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import socket
import struct
import subprocess
import sys
import time

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

A4, A6 = "10.99.0.1", "fd99::1"
B4, B6 = "10.99.0.2", "fd99::2"
PORT = 51820
TUN_A, TUN_B = "10.77.0.1", "10.77.0.2"
PROBE4, PROBE6, TUN_A6 = "10.77.0.3", "fd77::3", "fd77::1"

RESULTS = {"pass": 0, "fail": 0}


def check(cond, what):
    RESULTS["pass" if cond else "fail"] += 1
    print(("ok " if cond else "not ok ") + what, flush=True)
    return cond


def note(what):
    print("# " + what, flush=True)


# ---- WireGuard primitives (whitepaper section 5.4) ---------------------------------------

CONSTRUCTION = b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
IDENTIFIER = b"WireGuard v1 zx2c4 Jason@zx2c4.com"


def hash_(*parts):
    h = hashlib.blake2s()
    for p in parts:
        h.update(p)
    return h.digest()


def mac(key, data):
    return hashlib.blake2s(data, key=key, digest_size=16).digest()


def hmac_(key, data):
    return hmac.new(key, data, hashlib.blake2s).digest()


def kdf(chain, data, n):
    t0, out, t = hmac_(chain, data), [], b""
    for i in range(1, n + 1):
        t = hmac_(t0, t + bytes([i]))
        out.append(t)
    return out


def nonce(ctr):
    return b"\0" * 4 + struct.pack("<Q", ctr)


def seal(key, ctr, pt, ad=b""):
    return ChaCha20Poly1305(key).encrypt(nonce(ctr), pt, ad)


def open_(key, ctr, ct, ad=b""):
    return ChaCha20Poly1305(key).decrypt(nonce(ctr), ct, ad)


def pub_of(priv):
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def dh(priv, pub):
    return X25519PrivateKey.from_private_bytes(priv).exchange(X25519PublicKey.from_public_bytes(pub))


def tai64n():
    t = time.time_ns()
    return struct.pack(">QI", 0x400000000000000A + t // 10**9, t % 10**9)


def with_mac1(body, resp_pub):
    """body = message up to mac1; returns body || mac1 || zero mac2."""
    return body + mac(hash_(b"mac1----", resp_pub), body) + b"\0" * 16


class Probe:
    """A minimal WireGuard initiator: one handshake, then data messages."""

    def __init__(self, priv, resp_pub, sock, dst):
        self.priv, self.pub, self.resp_pub = priv, pub_of(priv), resp_pub
        self.sock, self.dst = sock, dst
        self.send_ctr = 0

    def initiation(self):
        eph = os.urandom(32)
        self.eph, self.sender = eph, struct.unpack("<I", os.urandom(4))[0]
        c = hash_(CONSTRUCTION)
        h = hash_(hash_(c, IDENTIFIER), self.resp_pub)
        epub = pub_of(eph)
        c = kdf(c, epub, 1)[0]
        h = hash_(h, epub)
        c, k = kdf(c, dh(eph, self.resp_pub), 2)
        static = seal(k, 0, self.pub, h)
        h = hash_(h, static)
        c, k = kdf(c, dh(self.priv, self.resp_pub), 2)
        ts = seal(k, 0, tai64n(), h)
        h = hash_(h, ts)
        self.c, self.h = c, h
        body = struct.pack("<II", 1, self.sender) + epub + static + ts
        return with_mac1(body, self.resp_pub)

    def consume_response(self, msg):
        typ, sender, receiver = struct.unpack_from("<III", msg)
        if typ != 2 or len(msg) != 92 or receiver != self.sender:
            return False
        repub, empty = msg[12:44], msg[44:60]
        c = kdf(self.c, repub, 1)[0]
        h = hash_(self.h, repub)
        c = kdf(c, dh(self.eph, repub), 1)[0]
        c = kdf(c, dh(self.priv, repub), 1)[0]
        c, tau, k = kdf(c, b"\0" * 32, 3)
        h = hash_(h, tau)
        try:
            open_(k, 0, empty, h)
        except Exception:
            return False
        self.send_key, self.recv_key = kdf(c, b"", 2)
        self.receiver = sender
        return True

    def handshake(self, tries=3):
        for _ in range(tries):
            self.sock.sendto(self.initiation(), self.dst)
            end = time.time() + 2
            while time.time() < end:
                self.sock.settimeout(max(0.05, end - time.time()))
                try:
                    msg = self.sock.recv(2048)
                except socket.timeout:
                    break
                if self.consume_response(msg):
                    return True
        return False

    def data(self, inner, ctr=None):
        if ctr is None:
            ctr, self.send_ctr = self.send_ctr, self.send_ctr + 1
        padded = inner + b"\0" * (-len(inner) % 16)
        return struct.pack("<IIQ", 4, self.receiver, ctr) + seal(self.send_key, ctr, padded)

    def recv_inner(self, timeout=2.0, want=lambda p: True):
        """Next non-keepalive inner packet that tunless sent us (decrypted), or None."""
        end = time.time() + timeout
        while time.time() < end:
            self.sock.settimeout(max(0.05, end - time.time()))
            try:
                msg = self.sock.recv(4096)
            except socket.timeout:
                return None
            if len(msg) < 32 or msg[0] != 4:
                continue
            ctr = struct.unpack_from("<Q", msg, 8)[0]
            try:
                pt = open_(self.recv_key, ctr, msg[16:])
            except Exception:
                continue
            if pt and want(pt):
                return pt
        return None


# ---- telemetry ---------------------------------------------------------------------------

def telemetry(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.settimeout(5)
        s.connect(path)
        s.recv(4096)
        s.send(cmd.encode())
        return json.loads(s.recv(1 << 20))[cmd]
    finally:
        s.close()


class Target:
    def __init__(self, tel, ns):
        self.tel, self.ns = tel, ns

    def drops(self):
        return telemetry(self.tel, "/tunless/drops")

    def stats(self):
        """The device's counters, with each port's under its name (wan, lan)."""
        s = telemetry(self.tel, "/tunless/device")
        s.update(telemetry(self.tel, "/tunless/ports"))
        return s

    def ping(self, dst, count=1, wait=2, src=None):
        cmd = ["ip", "netns", "exec", self.ns, "ping", "-q", "-n", "-c", str(count), "-W", str(wait)]
        if count > 1:
            cmd += ["-i", "0.05"]
        if src:
            cmd += ["-I", src]
        return subprocess.run(cmd + [dst], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def tunnel_ok(self):
        return any(self.ping(TUN_B) for _ in range(3))


def delta(before, after):
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def settle(tgt, base, reason, n, timeout=3.0):
    """Waits until `reason` grew by n (or timeout), then a little more for stragglers."""
    end = time.time() + timeout
    while time.time() < end:
        if tgt.drops().get(reason, 0) - base.get(reason, 0) >= n:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    return tgt.drops()


def case(tgt, name, reason, n, send, at_least=False):
    before = tgt.drops()
    send()
    after = settle(tgt, before, reason, n)
    d = delta(before, after)
    got = d.get(reason, 0)
    others = {k: v for k, v in d.items() if k != reason}
    good = (got >= n if at_least else got == n) and not others
    check(good, "%s: %s +%d%s (drops delta %s)" % (name, reason, n, " or more" if at_least else "", d or "{}"))
    check(tgt.tunnel_ok(), "%s: tunnel %s -> %s still answers" % (name, TUN_A, TUN_B))


# ---- junk senders ------------------------------------------------------------------------

def udp_socket(family, addr, port=0):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, port))
    return s


def blast(sock, dst, payloads):
    for p in payloads:
        sock.sendto(p, dst)


def rand(n):
    return os.urandom(n)


# What the kernel counts for a datagram it drops before any UDP socket sees it.
KERNEL_DROPS = ("IpInHdrErrors", "IpExtInTruncatedPkts", "UdpInErrors", "UdpInCsumErrors",
                "Ip6InHdrErrors", "Ip6InTruncatedPkts", "Udp6InErrors", "Udp6InCsumErrors")


def kernel_case(tgt, ns, name, n, send):
    """With the udp WAN port the kernel checks IP and UDP headers first: a broken one is
    dropped and counted by the kernel, and tunless sees nothing."""
    before, k0 = tgt.drops(), sum(kernel_counter(ns, c) for c in KERNEL_DROPS)
    send()
    time.sleep(0.5)
    d, k = delta(before, tgt.drops()), sum(kernel_counter(ns, c) for c in KERNEL_DROPS) - k0
    check(k >= n and not d, "%s: dropped and counted by the kernel (+%d, want +%d; tunless drops delta %s)"
          % (name, k, n, d or "{}"))
    check(tgt.tunnel_ok(), "%s: tunnel %s -> %s still answers" % (name, TUN_A, TUN_B))


def kernel_counter(ns, name):
    out = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-a", "-z", "-s", name],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == name:
            return int(f[1])
    return 0


def run(args):
    # scapy only where the kernel would not send what we want (bad lengths, fragments).
    from scapy.all import Ether, IP, IPv6, UDP, ICMP, ICMPv6EchoRequest, IPv6ExtHdrFragment, conf, fragment, fragment6

    tgt = Target(args.tel_a, args.ns_a)
    resp_pub = base64.b64decode(args.resp_pub)
    N = args.count
    j4 = udp_socket(socket.AF_INET, B4, 40001)
    j6 = udp_socket(socket.AF_INET6, B6, 40001)
    d4, d6 = (A4, PORT), (A6, PORT)
    l2 = conf.L2socket(iface=args.wan_if)
    src_mac = open("/sys/class/net/%s/address" % args.wan_if).read().strip()

    def frames(build):
        return lambda: [l2.send(build()) for _ in range(N)]

    def eth4(ip):
        return Ether(src=src_mac, dst=args.dst_mac) / ip

    def frame_case(name, reason, send):
        if args.wan_driver == "udp":
            kernel_case(tgt, args.ns_a, name, N, send)
        else:
            case(tgt, name, reason, N, send)

    check(tgt.tunnel_ok(), "setup: tunnel %s -> %s answers before the cases" % (TUN_A, TUN_B))
    # Let startup noise (neighbour resolution, first handshake) settle before measuring.
    quiet = tgt.drops()
    time.sleep(1.0)
    d = delta(quiet, tgt.drops())
    if d:
        note("drops still moving before the cases: %s" % d)

    # -- outer / message-length checks in the worker (decap.c) --
    case(tgt, "udp payload 3 bytes (v4)", "malformed", N, lambda: blast(j4, d4, [b"\x01\x00\x00"] * N))
    case(tgt, "udp payload 3 bytes (v6)", "malformed", N, lambda: blast(j6, d6, [b"\x04\x00\x00"] * N))
    case(tgt, "udp payload empty (v4)", "malformed", N, lambda: blast(j4, d4, [b""] * N))
    case(tgt, "initiation of 147 bytes", "malformed", N,
         lambda: blast(j4, d4, [b"\x01\0\0\0" + rand(143) for _ in range(N)]))
    case(tgt, "initiation of 149 bytes (v6)", "malformed", N,
         lambda: blast(j6, d6, [b"\x01\0\0\0" + rand(145) for _ in range(N)]))
    case(tgt, "response of 91 bytes", "malformed", N,
         lambda: blast(j4, d4, [b"\x02\0\0\0" + rand(87) for _ in range(N)]))
    case(tgt, "cookie reply of 65 bytes", "malformed", N,
         lambda: blast(j4, d4, [b"\x03\0\0\0" + rand(61) for _ in range(N)]))
    case(tgt, "data message of 20 bytes", "malformed", N,
         lambda: blast(j4, d4, [b"\x04\0\0\0" + rand(16) for _ in range(N)]))
    case(tgt, "data message of 31 bytes (v6)", "malformed", N,
         lambda: blast(j6, d6, [b"\x04\0\0\0" + rand(27) for _ in range(N)]))
    frame_case("udp length field past the frame", "malformed",
         frames(lambda: eth4(IP(src=B4, dst=A4) / UDP(sport=40002, dport=PORT, len=200) / (b"\x04\0\0\0" + rand(60)))))
    frame_case("udp length field short of the datagram", "malformed",
         frames(lambda: eth4(IP(src=B4, dst=A4) / UDP(sport=40002, dport=PORT, len=20) / (b"\x04\0\0\0" + rand(60)))))
    frame_case("ipv4 total length past the frame", "malformed",
         frames(lambda: eth4(IP(src=B4, dst=A4, len=400) / UDP(sport=40002, dport=PORT) / (b"\x04\0\0\0" + rand(60)))))
    frame_case("ipv6 payload length past the frame", "malformed",
         frames(lambda: eth4(IPv6(src=B6, dst=A6, plen=400) / UDP(sport=40002, dport=PORT) / (b"\x04\0\0\0" + rand(60)))))
    case(tgt, "unknown message type 7 (v4)", "unknown_type", N,
         lambda: blast(j4, d4, [b"\x07\0\0\0" + rand(60) for _ in range(N)]))
    case(tgt, "unknown message type 7 (v6)", "unknown_type", N,
         lambda: blast(j6, d6, [b"\x07\0\0\0" + rand(60) for _ in range(N)]))
    case(tgt, "type 1 with non-zero reserved bytes", "unknown_type", N,
         lambda: blast(j4, d4, [b"\x01\x01\0\0" + rand(144) for _ in range(N)]))
    case(tgt, "data message for an unknown receiver (v4)", "unknown_receiver", N,
         lambda: blast(j4, d4, [b"\x04\0\0\0" + rand(4) + bytes(8) + rand(48) for _ in range(N)]))
    case(tgt, "data message for an unknown receiver (v6)", "unknown_receiver", N,
         lambda: blast(j6, d6, [b"\x04\0\0\0" + rand(4) + bytes(8) + rand(32) for _ in range(N)]))

    # -- handshake messages on the control plane (handshake.c) --
    case(tgt, "initiation with a wrong mac1 (v4)", "bad_mac1", N,
         lambda: blast(j4, d4, [b"\x01\0\0\0" + rand(144) for _ in range(N)]))
    case(tgt, "initiation with a wrong mac1 (v6)", "bad_mac1", N,
         lambda: blast(j6, d6, [b"\x01\0\0\0" + rand(144) for _ in range(N)]))
    case(tgt, "response with a wrong mac1", "bad_mac1", N,
         lambda: blast(j4, d4, [b"\x02\0\0\0" + rand(88) for _ in range(N)]))

    def garbage_init():
        return with_mac1(b"\x01\0\0\0" + rand(112), resp_pub)

    case(tgt, "initiation with a good mac1, garbage body (v4)", "handshake_failed", N,
         lambda: blast(j4, d4, [garbage_init() for _ in range(N)]))
    case(tgt, "initiation with a good mac1, garbage body (v6)", "handshake_failed", N,
         lambda: blast(j6, d6, [garbage_init() for _ in range(N)]))
    case(tgt, "response with a good mac1 for an unknown receiver", "handshake_failed", N,
         lambda: blast(j4, d4, [with_mac1(b"\x02\0\0\0" + rand(56), resp_pub) for _ in range(N)]))
    case(tgt, "cookie reply for an unknown receiver", "handshake_failed", N,
         lambda: blast(j4, d4, [b"\x03\0\0\0" + rand(60) for _ in range(N)]))

    # -- fragments: the XDP program leaves them to the kernel (bpf/tl_wan.bpf.c) --
    def fragmented(v6):
        pay = garbage_init() + rand(200)
        if v6:
            pkt = IPv6(src=B6, dst=A6) / IPv6ExtHdrFragment(id=int.from_bytes(rand(4), "big")) / UDP(sport=40003, dport=PORT) / pay
            return [Ether(src=src_mac, dst=args.dst_mac) / f for f in fragment6(pkt, 200)]
        pkt = IP(src=B4, dst=A4, id=int.from_bytes(rand(2), "big")) / UDP(sport=40003, dport=PORT) / pay
        return [eth4(f) for f in fragment(pkt, fragsize=128)]

    for v6, reasm in ((False, "IpReasmOKs"), (True, "Ip6ReasmOKs")):
        name = "fragmented datagram to the listen port (%s)" % ("v6" if v6 else "v4")
        before, k0 = tgt.drops(), kernel_counter(args.ns_a, reasm)
        for _ in range(N):
            for f in fragmented(v6):
                l2.send(f)
        time.sleep(0.5)
        d, k = delta(before, tgt.drops()), kernel_counter(args.ns_a, reasm) - k0
        # The kernel reassembles them into tunless's listen socket; the datagram (an
        # initiation with 200 bytes too many) then counts as malformed like any other.
        check(k == N and d == {"malformed": N},
              "%s: reassembled by the kernel (%s +%d, want +%d) and counted by tunless (drops delta %s, want malformed +%d)"
              % (name, reasm, k, N, d or "{}", N))
        check(tgt.tunnel_ok(), "%s: tunnel still answers" % name)

    # -- a legitimate second peer (probe) and what it can get wrong --
    ps = udp_socket(socket.AF_INET, B4, 40000)
    probe = Probe(base64.b64decode(args.probe_priv), resp_pub, ps, d4)
    before = tgt.drops()
    ok = check(probe.handshake(), "probe: handshake with tunless completes")
    if ok:
        echo = bytes(IP(src=PROBE4, dst=TUN_A) / ICMP(id=0x7e57, seq=1) / b"probe")
        ps.sendto(probe.data(echo), d4)
        reply = probe.recv_inner(3, want=lambda p: p[9] == 1 and p[20] == 0)
        check(reply is not None, "probe: echo through tunless answered (decrypted reply from %s)" % TUN_A)
        check(not delta(before, tgt.drops()), "probe: no drops for the legitimate session (%s)" % (delta(before, tgt.drops()) or "{}"))

        def tampered():
            for i in range(N):
                m = bytearray(probe.data(bytes(IP(src=PROBE4, dst=TUN_A) / ICMP(id=0x7e57, seq=10 + i))))
                m[-1] ^= 0x80
                ps.sendto(bytes(m), d4)
        case(tgt, "data message with a flipped tag byte", "auth_failed", N, tampered)

        def bad_counter_msg():
            # valid ciphertext under counter c, sent with counter c+1: must not verify
            c = probe.send_ctr
            probe.send_ctr += 2
            m = bytearray(probe.data(bytes(IP(src=PROBE4, dst=TUN_A) / ICMP(id=0x7e57, seq=99)), ctr=c))
            m[8:16] = struct.pack("<Q", c + 1)
            return bytes(m)
        case(tgt, "data message with a counter it was not sealed under", "auth_failed", N,
             lambda: blast(ps, d4, [bad_counter_msg() for _ in range(N)]))

        legit = probe.data(bytes(IP(src=PROBE4, dst=TUN_A) / ICMP(id=0x7e57, seq=200) / b"replay"))
        before = tgt.drops()
        ps.sendto(legit, d4)
        got = probe.recv_inner(3, want=lambda p: p[9] == 1 and p[20] == 0)
        check(got is not None and not delta(before, tgt.drops()), "probe: the packet to be replayed is accepted once")
        case(tgt, "exact replay of an accepted data message", "replay", N, lambda: blast(ps, d4, [legit] * N))
        old = probe.send_ctr
        probe.send_ctr += 9000                         # move the window beyond 8128 behind
        ps.sendto(probe.data(bytes(IP(src=PROBE4, dst=TUN_A) / ICMP(id=0x7e57, seq=300))), d4)
        probe.recv_inner(3, want=lambda p: p[9] == 1 and p[20] == 0)
        case(tgt, "fresh counter far behind the window", "replay", N,
             lambda: blast(ps, d4, [probe.data(bytes(IP(src=PROBE4, dst=TUN_A) / ICMP()), ctr=old + 1 + i) for i in range(N)]))
        case(tgt, "inner IPv4 source outside the probe's allowed IPs", "src_not_allowed", N,
             lambda: blast(ps, d4, [probe.data(bytes(IP(src="10.77.0.99", dst=TUN_A) / ICMP(seq=i))) for i in range(N)]))
        case(tgt, "inner IPv6 source outside the probe's allowed IPs", "src_not_allowed", N,
             lambda: blast(ps, d4, [probe.data(bytes(IPv6(src="fd77::99", dst=TUN_A6) / ICMPv6EchoRequest(seq=i))) for i in range(N)]))
        case(tgt, "inner source of the other peer (10.77.0.2) from the probe", "src_not_allowed", N,
             lambda: blast(ps, d4, [probe.data(bytes(IP(src=TUN_B, dst=TUN_A) / ICMP(seq=i))) for i in range(N)]))
        case(tgt, "inner packet that is not IP", "malformed", N,
             lambda: blast(ps, d4, [probe.data(b"\x00" * 40) for _ in range(N)]))

    # -- the real peer (tunless B) encrypting a source outside its allowed IPs --
    subprocess.run(["ip", "addr", "add", "10.88.0.1/32", "dev", args.peer_if], check=False)
    case(tgt, "peer B sends from 10.88.0.1 (ping -I)", "src_not_allowed", N,
         lambda: subprocess.run(["ping", "-q", "-n", "-c", str(N), "-i", "0.05", "-W", "1", "-I", "10.88.0.1", TUN_A],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    subprocess.run(["ip", "addr", "del", "10.88.0.1/32", "dev", args.peer_if], check=False)

    # -- the host side of A sending to a tunnel address no peer owns (encap.c) --
    case(tgt, "host A pings 10.77.0.99 (no peer)", "no_route", N, lambda: tgt.ping("10.77.0.99", N, 1))
    case(tgt, "host A pings fd77::99 (no peer)", "no_route", N, lambda: tgt.ping("fd77::99", N, 1))

    flood(tgt, args, j4, d4, garbage_init)
    print("%d passed, %d failed" % (RESULTS["pass"], RESULTS["fail"]), flush=True)
    return 0 if RESULTS["fail"] == 0 else 1


def xaead_open(key, nonce24, ct, ad):
    """XChaCha20-Poly1305 (cookie replies) through libsodium: python's cryptography lacks it."""
    import ctypes
    lib = ctypes.CDLL("libsodium.so.23")
    out = ctypes.create_string_buffer(len(ct))
    outlen = ctypes.c_ulonglong(0)
    r = lib.crypto_aead_xchacha20poly1305_ietf_decrypt(out, ctypes.byref(outlen), None, ct, ctypes.c_ulonglong(len(ct)),
                                                       ad, ctypes.c_ulonglong(len(ad)), nonce24, key)
    return out.raw[:outlen.value] if r == 0 else None


def drain(sock):
    """Cookie replies (type 3, 64 bytes) waiting on a socket."""
    got = []
    sock.setblocking(False)
    while True:
        try:
            m = sock.recv(2048)
        except BlockingIOError:
            break
        if len(m) == 64 and m[0] == 3:
            got.append(m)
    sock.setblocking(True)
    return got


def send_all(sock, dst, msgs):
    sock.setblocking(False)
    sent = 0
    for m in msgs:
        while True:
            try:
                sock.sendto(m, dst)
                sent += 1
                break
            except BlockingIOError:
                time.sleep(0)
    sock.setblocking(True)
    return sent


def wait_quiet(tgt, timeout=30):
    end, last = time.time() + timeout, None
    while time.time() < end:
        cur = (tgt.stats()["to_ctrl"], tgt.drops())
        if last and cur == last:
            return
        last = cur
        time.sleep(0.5)


def veth_drops(wan_if):
    base = "/sys/class/net/%s/statistics/" % wan_if
    return int(open(base + "tx_dropped").read())


def flood(tgt, args, sock, dst, garbage_init):
    """2000 initiations with a valid mac1 and garbage bodies, as fast as a socket goes; then
    the cookie round trip: a cookie reply decrypts, and initiations carrying its mac2 pass
    the under-load check (no cookie reply for them)."""
    F = args.flood
    resp_pub = base64.b64decode(args.resp_pub)
    SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)   # count every cookie reply
    drain(sock)
    msgs = [garbage_init() for _ in range(F)]
    c4 = udp_socket(socket.AF_INET, B4, 40004)
    c4.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 20)
    # a few more from another port, spread through the flood: processed under load, each
    # gets a cookie reply (the control plane waits for room in its TX ring to answer)
    LATE_AT = (600, 900, 1200, 1500)
    lates = [garbage_init() for _ in LATE_AT]
    d0, s0, v0 = tgt.drops(), tgt.stats(), veth_drops(args.wan_if)
    t0 = time.perf_counter()
    sent, prev = 0, 0
    for at, late in zip(LATE_AT, lates):
        sent += send_all(sock, dst, msgs[prev:at])
        c4.sendto(late, dst)
        prev = at
    sent += send_all(sock, dst, msgs[prev:])
    t1 = time.perf_counter()
    wait_quiet(tgt)
    d1, s1, v1 = tgt.drops(), tgt.stats(), veth_drops(args.wan_if)
    dd = delta(d0, d1)
    F1 = F + len(lates)
    to_ctrl = s1["to_ctrl"] - s0["to_ctrl"]
    hs_rx = s1["handshakes_received"] - s0["handshakes_received"]
    cookies = s1["cookies_sent"] - s0["cookies_sent"]
    imissed = s1["wan"]["ethdev_rx_missed"] - s0["wan"]["ethdev_rx_missed"]
    # the port's imissed under its drop-reason name: the AF_XDP ring, or the udp port's sockets
    missed = dd.get("xsk_ring_full", 0) + dd.get("kernel_socket_overflow", 0)
    wan_rx = s1["wan"]["rx_packets"] - s0["wan"]["rx_packets"]
    vdrop = v1 - v0
    replies = drain(sock)
    late_replies = drain(c4)
    ctrl_fate = dd.get("handshake_failed", 0) + dd.get("bad_mac2", 0) + dd.get("bad_mac1", 0)
    note("flood: %d initiations sent in %.3f s (%.0f/s), +%d from port 40004 among them" % (sent, t1 - t0, sent / max(t1 - t0, 1e-9), len(lates)))
    note("flood: veth-b tx_dropped +%d, wan ethdev_rx_missed +%d, wan rx +%d, to_ctrl +%d, handshakes_received +%d"
         % (vdrop, imissed, wan_rx, to_ctrl, hs_rx))
    note("flood: drops delta %s" % dd)
    note("flood: cookies_sent +%d, cookie replies received by the flooder %d (+%d on port 40004)"
         % (cookies, len(replies), len(late_replies)))
    check(os.path.exists(args.tel_a), "flood: daemon A still serves telemetry")
    check(sent == F, "flood: all %d datagrams left the socket" % F)
    check(to_ctrl == ctrl_fate + hs_rx,
          "flood: every message handed to the control plane has one fate (to_ctrl +%d == handshake_failed+bad_mac2+bad_mac1 +%d + accepted %d)"
          % (to_ctrl, ctrl_fate, hs_rx))
    lost = vdrop + dd.get("handshake_overload", 0) + missed
    check(to_ctrl - hs_rx + lost == F1,
          "flood: conservation: to_ctrl(+%d) - accepted(%d) + veth drops(%d) + handshake_overload(%d) + missed at the port(%d) == %d sent"
          % (to_ctrl, hs_rx, vdrop, dd.get("handshake_overload", 0), missed, F1))
    other = {k: v for k, v in dd.items() if k not in ("handshake_failed", "bad_mac2", "bad_mac1", "handshake_overload", "xsk_ring_full",
                                                      "kernel_socket_overflow", "ctrl_backlog")}
    check(not other, "flood: no unrelated drop reason moved (%s)" % (other or "{}"))
    check(dd.get("bad_mac2", 0) > 0, "flood: the daemon went under load (bad_mac2 +%d)" % dd.get("bad_mac2", 0))
    check(cookies > 0, "flood: under load it sent cookie replies (bad_mac2 +%d, cookies_sent +%d)" % (dd["bad_mac2"], cookies))
    check(cookies + dd.get("ctrl_backlog", 0) == dd["bad_mac2"],
          "flood: one cookie reply per bad_mac2, the rest counted (cookies_sent +%d + ctrl_backlog +%d == bad_mac2 +%d)"
          % (cookies, dd.get("ctrl_backlog", 0), dd["bad_mac2"]))
    check(dd.get("ctrl_backlog", 0) == 0,
          "flood: no answer dropped for a full control TX ring (ctrl_backlog +%d)" % dd.get("ctrl_backlog", 0))
    check(len(replies) + len(late_replies) == cookies,
          "flood: every cookie reply sent reached the flooder (%d + %d received, %d sent)" % (len(replies), len(late_replies), cookies))

    # The cookie round trip (whitepaper 5.4.7), with the reply the port-40004 message got.
    check(len(late_replies) > 0, "flood: a message from port 40004 was processed under load and got a cookie reply")
    if late_replies:
        r = late_replies[0]
        late = next((m for m in lates if m[4:8] == r[4:8]), lates[0])
        ckey = hash_(b"cookie--", resp_pub)
        cookie = xaead_open(ckey, r[8:32], r[32:64], late[116:132])
        check(cookie is not None and len(cookie) == 16 and r[4:8] == late[4:8],
              "cookie reply decrypts with HASH(\"cookie--\" || A's public key), AD = our mac1, addressed to our sender index")
        if cookie:
            def with_mac2():
                m = garbage_init()[:132]
                return m + mac(cookie, m)
            M = 5
            d0, s0 = tgt.drops(), tgt.stats()
            send_all(sock, dst, msgs[:1000])      # load again
            for _ in range(M):
                c4.sendto(with_mac2(), dst)
            wait_quiet(tgt)
            d1, s1 = tgt.drops(), tgt.stats()
            dd = delta(d0, d1)
            got = drain(c4)
            drain(sock)
            note("flood 2: drops delta %s, cookies_sent +%d, replies to port 40004: %d"
                 % (dd, s1["cookies_sent"] - s0["cookies_sent"], len(got)))
            check(dd.get("bad_mac2", 0) > 0 and not got,
                  "under load, initiations with a valid mac2 pass the cookie check (no cookie reply for them)")
            check(dd.get("handshake_failed", 0) + dd.get("bad_mac2", 0) == 1000 + M,
                  "flood 2: handshake_failed + bad_mac2 == %d sent" % (1000 + M))
    check(tgt.tunnel_ok(), "flood: tunnel %s -> %s still answers" % (TUN_A, TUN_B))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("keygen")
    r = sub.add_parser("run")
    r.add_argument("--ns-a", required=True)
    r.add_argument("--tel-a", required=True)
    r.add_argument("--dst-mac", required=True, help="MAC of veth-a")
    r.add_argument("--wan-if", default="veth-b")
    r.add_argument("--resp-pub", required=True, help="public key of tunless A")
    r.add_argument("--probe-priv", required=True)
    r.add_argument("--peer-if", required=True, help="host interface of tunless B")
    r.add_argument("--count", type=int, default=5)
    r.add_argument("--flood", type=int, default=2000)
    r.add_argument("--wan-driver", default="af_xdp", help="A's WAN port kind: af_xdp or udp")
    args = ap.parse_args()
    if args.cmd == "keygen":
        priv = bytearray(os.urandom(32))
        priv[0] &= 248
        priv[31] = (priv[31] & 127) | 64
        print(base64.b64encode(bytes(priv)).decode(), base64.b64encode(pub_of(bytes(priv))).decode())
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
