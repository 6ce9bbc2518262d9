#!/usr/bin/env python3
"""tunlessctl import: wg-quick's documented example configurations become host-mode YAML that
tunlessd --check accepts, with the same keys, addresses, allowed IPs, endpoints, keepalives and
preshared keys; what is not carried over is reported on stderr; bad input is refused.
Usage: test_import.py TUNLESSCTL TUNLESSD DIR_WITH_CONFS"""
import os
import subprocess
import sys
import tempfile

import yaml

ctl, daemon, confdir = sys.argv[1:4]
failures = 0


def check(what, ok, detail=''):
    global failures
    print(('ok   ' if ok else 'FAIL ') + what + (': ' + detail if detail and not ok else ''))
    failures += 0 if ok else 1


def wg_quick(path):
    """The expected values, read the way wg-quick reads the file (repeated keys, comma lists)."""
    iface, peers, cur = {'addr': []}, [], None
    for line in open(path):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        if line.startswith('['):
            cur = iface if line.lower() == '[interface]' else {'allowed': []}
            if cur is not iface:
                peers.append(cur)
            continue
        k, v = (s.strip() for s in line.split('=', 1))
        k = k.lower()
        if k == 'address':
            iface['addr'] += [a.strip() for a in v.split(',') if a.strip()]
        elif k == 'allowedips':
            cur['allowed'] += [a.strip() for a in v.split(',') if a.strip()]
        else:
            cur[k] = v
    return iface, peers


with tempfile.TemporaryDirectory() as tmp:
    for name in sorted(os.listdir(confdir)):
        if not name.endswith('.conf'):
            continue
        src = os.path.join(confdir, name)
        out = os.path.join(tmp, name[:-5] + '.yaml')
        r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
        check(f'{name}: import exits 0', r.returncode == 0, r.stderr)
        if r.returncode:
            continue
        r2 = subprocess.run([daemon, '--check', '-c', out], capture_output=True, text=True)
        check(f'{name}: tunlessd --check accepts the output', r2.returncode == 0, r2.stdout + r2.stderr)
        y = yaml.safe_load(open(out))
        iface, peers = wg_quick(src)
        check(f'{name}: name from the file name', y['name'] == name[:-5][:15], y['name'])
        check(f'{name}: host mode', y['mode'] == 'host')
        check(f'{name}: private key', y['private_key'] == iface['privatekey'])
        check(f'{name}: addresses', y.get('addresses', []) == iface['addr'], str(y.get('addresses')))
        check(f'{name}: listen port', y.get('listen_port') == (int(iface['listenport']) if 'listenport' in iface else None))
        check(f'{name}: mtu', y.get('mtu') == (int(iface['mtu']) if 'mtu' in iface else None))
        check(f'{name}: peer count', len(y.get('peers', [])) == len(peers))
        for i, (yp, p) in enumerate(zip(y.get('peers', []), peers)):
            check(f'{name}: peer {i} public key', yp['public_key'] == p['publickey'])
            check(f'{name}: peer {i} psk', yp.get('preshared_key') == p.get('presharedkey'))
            check(f'{name}: peer {i} allowed ips', yp.get('allowed_ips', []) == p['allowed'], str(yp.get('allowed_ips')))
            check(f'{name}: peer {i} keepalive', yp.get('persistent_keepalive', 0) == int(p.get('persistentkeepalive', 0)))
            ep = p.get('endpoint')
            numeric = ep is not None and (ep.startswith('[') or ep.split(':')[0].replace('.', '').isdigit())
            if numeric:
                check(f'{name}: peer {i} endpoint', yp.get('endpoint') == ep, str(yp.get('endpoint')))
            elif ep:
                check(f'{name}: peer {i} host-name endpoint left out and reported',
                      'endpoint' not in yp and 'Endpoint not carried over' in r.stderr, r.stderr)
        for key in ('DNS', 'SaveConfig', 'PostUp', 'PostDown', 'Table', 'FwMark'):
            if key.lower() in iface:
                check(f'{name}: {key} reported as not carried over', f'{key} not carried over' in r.stderr, r.stderr)

    bad = {
        'missing PrivateKey': ('[Interface]\nAddress = 10.0.0.1/24\n', 'no PrivateKey'),
        'bad key': ('[Interface]\nPrivateKey = notakey=\n', "PrivateKey: 'notakey=' is not a 32-byte base64 key"),
        'bad peer key': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\n'
                         'PublicKey = AAAA\n', 'PublicKey'),
        'peer without PublicKey': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\n'
                                   'AllowedIPs = 10.0.0.2/32\n', 'has no PublicKey'),
        'unknown section': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peers]\n',
                            'unknown section [Peers]'),
        'unknown key': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\nListenPrt = 1\n',
                        'unknown [Interface] key ListenPrt'),
        # addresses and allowed IPs are checked by common/addr.c as tunlessd checks them, with its
        # messages: what import writes, tunlessd --check reads
        'bad address': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n'
                        'Address = 10.0.0.300/24\n', "Address: '10.0.0.300/24' is not an IPv4/IPv6 prefix"),
        'prefix length with a sign': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n'
                                      'Address = 10.0.0.1/+24\n', "Address: '10.0.0.1/+24' has a malformed prefix length"),
        'allowed IP above /32': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\n'
                                 'PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nAllowedIPs = 10.0.0.0/33\n',
                                 "AllowedIPs: '10.0.0.0/33' has a prefix length above 32"),
        'bad port': ('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\nListenPort = 70000\n',
                     'ListenPort'),
    }
    for what, (text, msg) in bad.items():
        src = os.path.join(tmp, 'bad.conf')
        out = os.path.join(tmp, 'bad.yaml')
        if os.path.exists(out):
            os.remove(out)
        open(src, 'w').write(text)
        r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
        check(f'bad input, {what}: exit status != 0 and "{msg}"', r.returncode != 0 and msg in r.stderr,
              f'rc={r.returncode} {r.stderr}')
        check(f'bad input, {what}: no output written', not os.path.exists(out))
    r = subprocess.run([ctl, 'import', os.path.join(tmp, 'absent.conf')], capture_output=True, text=True)
    check('missing file: exit status != 0', r.returncode != 0 and 'absent.conf' in r.stderr, r.stderr)

    # An endpoint tunlessd would refuse (a port with a sign) is left out and reported, like a
    # host name; the output passes tunlessd --check. A name of digits is written as a string.
    src = os.path.join(tmp, '1234.conf')
    out = os.path.join(tmp, '1234.yaml')
    open(src, 'w').write('[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n[Peer]\n'
                         'PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nEndpoint = 192.0.2.1:+51820\n')
    r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
    y = yaml.safe_load(open(out)) if r.returncode == 0 else {}
    check('endpoint 192.0.2.1:+51820: left out and reported', r.returncode == 0 and 'endpoint' not in (y.get('peers') or [{}])[0]
          and "Endpoint not carried over: '192.0.2.1:+51820' has a port outside 1..65535" in r.stderr,
          f'rc={r.returncode} {y} {r.stderr}')
    check('a file named 1234.conf: the name reads back as the string "1234"', y.get('name') == '1234', repr(y.get('name')))
    r2 = subprocess.run([daemon, '--check', '-c', out], capture_output=True, text=True)
    check('endpoint 192.0.2.1:+51820: tunlessd --check accepts the output', r2.returncode == 0, r2.stdout + r2.stderr)

    # The output holds the private key: 0600 under the usual umask 022, an existing file open
    # to group or others is not overwritten, a 0600 one is (truncated); tunlessd warns about an
    # inline key in a file others can read.
    src = os.path.join(confdir, 'wg-quick-server.conf')
    out = os.path.join(tmp, 'mode.yaml')
    old_umask = os.umask(0o022)
    r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
    mode = os.stat(out).st_mode & 0o7777 if os.path.exists(out) else None
    check('output mode 0600 under umask 022', r.returncode == 0 and mode == 0o600,
          f'rc={r.returncode} mode={oct(mode) if mode is not None else None} {r.stderr}')
    fresh = open(out).read() if os.path.exists(out) else ''
    check('the 0600 output holds the private key', 'private_key: ' in fresh)
    for open_mode in (0o644, 0o640, 0o604):
        open(out, 'w').write('precious: true\n')
        os.chmod(out, open_mode)
        r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
        check(f'existing {oct(open_mode)} output: refused, exit status != 0, the reason named',
              r.returncode != 0 and f'exists with mode {open_mode:04o}, open to group or others' in r.stderr
              and 'not overwritten' in r.stderr, f'rc={r.returncode} {r.stderr}')
        check(f'existing {oct(open_mode)} output: its text and mode untouched',
              open(out).read() == 'precious: true\n' and os.stat(out).st_mode & 0o7777 == open_mode,
              f'{open(out).read()!r} {oct(os.stat(out).st_mode & 0o7777)}')
    os.chmod(out, 0o600)
    open(out, 'w').write('x' * (len(fresh) + 4096))
    r = subprocess.run([ctl, 'import', src, '-o', out], capture_output=True, text=True)
    check('existing 0600 output, longer than the import: overwritten whole, still 0600',
          r.returncode == 0 and open(out).read() == fresh and os.stat(out).st_mode & 0o7777 == 0o600,
          f'rc={r.returncode} {r.stderr}')
    os.umask(old_umask)
    r = subprocess.run([daemon, '--check', '-c', out], capture_output=True, text=True)
    check('tunlessd --check: the 0600 file holding inline keys, no warning about its mode',
          r.returncode == 0 and 'group or others' not in r.stdout + r.stderr, r.stdout + r.stderr)
    os.chmod(out, 0o644)
    r = subprocess.run([daemon, '--check', '-c', out], capture_output=True, text=True)
    check('tunlessd --check: the same file 0644 warns that it holds the private key inline',
          r.returncode == 0 and 'private_key: ' in r.stderr and 'holds this key inline' in r.stderr
          and '(mode 0644)' in r.stderr, r.stdout + r.stderr)

sys.exit(1 if failures else 0)
