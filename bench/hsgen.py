#!/usr/bin/python3
"""Distinct WireGuard initiators returning to a hub at once: completed handshakes per second.

An independent Noise IKpsk2 initiator (the WireGuard whitepaper, section 5.4) over Python's
`cryptography` (X25519, ChaCha20-Poly1305) and hashlib (BLAKE2s); cookie replies are opened
with PyNaCl's XChaCha20-Poly1305. Each initiator is one of the hub's peers (its private key
from the keys file) with a source address of its own (172.16.0.0/12 + 1 + i, up to 2^20 - 2
initiators, sent with IP_PKTINFO: the caller routes that range to this host, e.g. `ip route
add local 172.16.0.0/12 dev lo`), so per-source rate limits see distinct clients.

Initiations are built before the clock starts (two X25519 each, on every CPU), then all of
them are sent at once; a cookie reply makes that initiator send the same initiation again
with mac2 (as the hub asks under load); an initiation unanswered after --retry seconds is
sent again with a fresh ephemeral, timestamp and sender index (a response to the earlier
one still counts, and is opened with that one's keys). The run ends when every initiator has its
response or at --timeout. A sample of the responses is opened as the initiator would (ee, se,
psk, the empty payload's tag) after the clock stops: a response that does not open is an
error. Prints one JSON object:
  {"initiators", "completed", "seconds", "handshakes_per_s", "cookies", "resent", "verified",
   "verify_failed"}

Usage: hsgen.py KEYS_FILE SERVER_PUB_B64 HOST:PORT [--timeout 60] [--retry 2] [--sample 300]
KEYS_FILE: one base64 private key per line (the hub's peers, in order).
"""
import argparse, base64, hashlib, hmac, json, os, random, select, socket, struct, sys, time
from concurrent.futures import ProcessPoolExecutor

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization as ser
import nacl.bindings

CONSTRUCTION = b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
IDENTIFIER = b"WireGuard v1 zx2c4 Jason@zx2c4.com"
LABEL_MAC1 = b"mac1----"
LABEL_COOKIE = b"cookie--"
SRC_BASE = 0xAC100000                 # 172.16.0.0/12
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)    # <linux/in.h>; not every Python names it


def HASH(*parts):
    return hashlib.blake2s(b"".join(parts)).digest()


def MAC(key, data):
    return hashlib.blake2s(data, digest_size=16, key=key).digest()


def HMAC(key, data):
    return hmac.new(key, data, hashlib.blake2s).digest()


def KDF(key, data, n):
    t0 = HMAC(key, data)
    out, prev = [], b""
    for i in range(1, n + 1):
        prev = HMAC(t0, prev + bytes([i]))
        out.append(prev)
    return out


def AEAD(key, counter, plain, ad):
    return ChaCha20Poly1305(key).encrypt(b"\0" * 4 + struct.pack("<Q", counter), plain, ad)


def OPEN(key, counter, sealed, ad):
    return ChaCha20Poly1305(key).decrypt(b"\0" * 4 + struct.pack("<Q", counter), sealed, ad)


def raw_pub(k):
    return k.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)


def raw_priv(k):
    return k.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())


def tai64n():
    t = time.time()
    return struct.pack(">QI", 0x400000000000000A + int(t), int((t % 1) * 1e9))


def initiation(args):
    """One initiation of initiator `sender` (its static private key si) to the hub (sr_pub):
    the message without mac2, and what the response needs (ephemeral, chaining key, hash)."""
    si_raw, sr_pub, sender = args
    si = X25519PrivateKey.from_private_bytes(si_raw)
    sr = X25519PublicKey.from_public_bytes(sr_pub)
    c = HASH(CONSTRUCTION)
    h = HASH(HASH(c, IDENTIFIER), sr_pub)
    e = X25519PrivateKey.generate()
    e_pub = raw_pub(e)
    c = KDF(c, e_pub, 1)[0]
    h = HASH(h, e_pub)
    c, k = KDF(c, e.exchange(sr), 2)
    static = AEAD(k, 0, raw_pub(si), h)
    h = HASH(h, static)
    c, k = KDF(c, si.exchange(sr), 2)
    ts = AEAD(k, 0, tai64n(), h)
    h = HASH(h, ts)
    body = struct.pack("<II", 1, sender) + e_pub + static + ts
    mac1 = MAC(HASH(LABEL_MAC1, sr_pub), body)
    return body + mac1, raw_priv(e), c, h


def build_all(keys, sr_pub, senders):
    work = [(keys[i], sr_pub, senders[i]) for i in range(len(keys))]
    with ProcessPoolExecutor() as pool:
        return list(pool.map(initiation, work, chunksize=256))


def verify(resp, e_raw, si_raw, c, h):
    """The response opened as the initiator does (whitepaper 5.4.3); raises if it does not."""
    e = X25519PrivateKey.from_private_bytes(e_raw)
    si = X25519PrivateKey.from_private_bytes(si_raw)
    er_pub = resp[12:44]
    er = X25519PublicKey.from_public_bytes(er_pub)
    c = KDF(c, er_pub, 1)[0]
    h = HASH(h, er_pub)
    c = KDF(c, e.exchange(er), 1)[0]
    c = KDF(c, si.exchange(er), 1)[0]
    c, tau, k = KDF(c, b"\0" * 32, 3)          # no preshared key
    h = HASH(h, tau)
    OPEN(k, 0, resp[44:60], h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("keys")
    ap.add_argument("server_pub")
    ap.add_argument("server")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--retry", type=float, default=2)
    ap.add_argument("--sample", type=int, default=300)
    a = ap.parse_args()
    keys = [base64.b64decode(l.strip()) for l in open(a.keys) if l.strip()]
    sr_pub = base64.b64decode(a.server_pub)
    host, port = a.server.rsplit(":", 1)
    dst = (host, int(port))
    n = len(keys)
    if n > (1 << 20) - 2:
        sys.exit("at most %d initiators (one source address each)" % ((1 << 20) - 2))
    senders = random.sample(range(1, 1 << 31), n)
    msgs = build_all(keys, sr_pub, senders)
    by_sender = {s: (i, msgs[i]) for i, s in enumerate(senders)}   # every initiation sent
    cookie_key = HASH(LABEL_COOKIE, sr_pub)

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 20)
    sock.bind(("0.0.0.0", 0))
    sock.setblocking(False)
    src = [struct.pack(">I", SRC_BASE + 1 + i) for i in range(n)]
    wire = [m[0] + b"\0" * 16 for m in msgs]     # mac2 zero until a cookie comes
    done = [None] * n                        # the response, and the initiation it answers
    sent_at = [0.0] * n
    pending = list(range(n))
    cookies = resent = completed = 0

    def send(i):
        anc = [(socket.IPPROTO_IP, IP_PKTINFO, struct.pack("I4s4s", 0, src[i], b"\0" * 4))]
        while True:
            try:
                sock.sendmsg([wire[i]], anc, 0, dst)
                break
            except BlockingIOError:
                select.select([], [sock], [], 0.01)
        sent_at[i] = time.monotonic()

    def receive():
        nonlocal cookies, completed
        got = 0
        while True:
            try:
                data = sock.recv(256)
            except BlockingIOError:
                return got
            got += 1
            kind = struct.unpack_from("<I", data)[0] if len(data) >= 4 else 0
            if kind == 2 and len(data) == 92:
                i, m = by_sender.get(struct.unpack_from("<I", data, 8)[0], (None, None))
                if i is not None and done[i] is None:
                    done[i] = (data, m)
                    completed += 1
            elif kind == 3 and len(data) == 64:
                i, m = by_sender.get(struct.unpack_from("<I", data, 4)[0], (None, None))
                if i is None or done[i] is not None or m is not msgs[i]:
                    continue         # answered, or a cookie for an initiation sent before
                body = wire[i][:132]
                try:        # for an initiation sent before this one: not ours to open
                    cookie = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
                        data[32:64], body[116:132], data[8:32], cookie_key)
                except Exception:
                    continue
                wire[i] = body + MAC(cookie, body)
                cookies += 1
                send(i)

    t0 = time.monotonic()
    for i in pending:
        send(i)
        if i % 64 == 63:
            receive()
    end = t0 + a.timeout
    last = scan = t0
    while completed < n and time.monotonic() < end:
        select.select([sock], [], [], 0.05)
        if receive():
            last = time.monotonic()
        now = time.monotonic()
        if now - scan < 0.5:
            continue
        scan = now
        pending = [i for i in pending if done[i] is None]
        for i in pending:
            if now - sent_at[i] > a.retry:
                senders[i] = random.randrange(1, 1 << 31)
                while senders[i] in by_sender:
                    senders[i] = random.randrange(1, 1 << 31)
                m = initiation((keys[i], sr_pub, senders[i]))
                msgs[i] = m
                by_sender[senders[i]] = (i, m)
                wire[i] = m[0] + b"\0" * 16
                resent += 1
                send(i)
                if resent % 64 == 0 and receive():
                    last = time.monotonic()
    elapsed = max(last - t0, 1e-9)
    verified = failed = 0
    for i in random.sample([i for i in range(n) if done[i]], min(a.sample, completed)):
        try:
            resp, m = done[i]
            verify(resp, m[1], keys[i], m[2], m[3])
            verified += 1
        except Exception:
            failed += 1
    print(json.dumps({"initiators": n, "completed": completed, "seconds": round(elapsed, 3),
                      "handshakes_per_s": round(completed / elapsed, 1), "cookies": cookies,
                      "resent": resent, "verified": verified, "verify_failed": failed}))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
