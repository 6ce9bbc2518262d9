#!/usr/bin/env python3
"""Two instances of tunless@.service where no systemd can run: what systemd does with the
unit's runtime directories, done by hand with the settings read from the unit file, around
real tunlessd processes. Run it in a private mount namespace (unshare --mount): it mounts a
fresh tmpfs on /run, as a boot does, so that nothing outside sees its directories.

What systemd does, as systemd.exec(5) says, and this does:
  boot    /run is an empty tmpfs; systemd-tmpfiles --create applies the package's tmpfiles.d
          file (when given and present);
  start   each RuntimeDirectory= entry (%i expanded) is made below /run with
          RuntimeDirectoryMode= (0755 by default), then ExecStartPre= and ExecStart= run;
  stop    the main process gets SIGTERM (SIGKILL after TimeoutStopSec=), ExecStopPost= runs,
          then each RuntimeDirectory= entry is removed with what is in it unless
          RuntimeDirectoryPreserve= is yes (or restart, on an automatic restart).
ExecStart's /usr/sbin/tunlessd and /etc/tunless/ are replaced by the build's daemon and the
test's configuration directory.

The checks: both instances answer on their sockets (tunlessctl show, wg show); a socket of
another implementation (as wireguard-go puts in /run/wireguard) is made; stopping the first
instance leaves the second's sockets and the other one in place and serving, and removes the
first's own; the second killed (a crash) and restarted by the unit's Restart= answers again;
stopping it removes its sockets and leaves the directories.

Usage: sd_runtime.py UNIT TMPFILES TUNLESSD TUNLESSCTL ETC_DIR LOG_DIR INSTANCE_A INSTANCE_B
(ETC_DIR/<instance>.yaml each; TMPFILES may name a file that does not exist). Prints
"ok ..."/"not ok ..." lines, exits 1 if any failed."""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

unit_path, tmpfiles, daemon, ctl, etc, logdir = sys.argv[1:7]
instances = sys.argv[7:9]
failures = 0


def check(what, ok, detail=''):
    global failures
    print(('ok ' if ok else 'not ok ') + what + (' (%s)' % detail if detail and not ok else ''), flush=True)
    failures += 0 if ok else 1


def note(what):
    print('# ' + what, flush=True)


def read_unit(path):
    """[Service] settings: lists for the keys that accumulate, the last value for the rest."""
    service, section = {}, None
    for raw in open(path):
        line = raw.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('['):
            section = line
            continue
        if section != '[Service]' or '=' not in line:
            continue
        key, value = (s.strip() for s in line.split('=', 1))
        if key in ('RuntimeDirectory', 'ExecStartPre', 'ExecStopPost'):
            if value == '':
                service[key] = []          # an empty assignment resets the list
            else:
                service.setdefault(key, []).extend(value.split() if key == 'RuntimeDirectory' else [value])
        else:
            service[key] = value
    return service


def spec(s, inst):
    return re.sub(r'%([%i])', lambda m: '%' if m.group(1) == '%' else inst, s)


def command(line, inst):
    line = spec(line, inst).lstrip('-@:+!')   # the prefixes: ignore failure, argv0, privileges
    line = line.replace('/usr/sbin/tunlessd', daemon).replace('/etc/tunless/', etc.rstrip('/') + '/')
    return shlex.split(line)


def seconds(v, default):
    m = re.fullmatch(r'(\d+)\s*(s|sec)?', (v or '').strip())
    return int(m.group(1)) if m else default


unit = read_unit(unit_path)
rundirs = unit.get('RuntimeDirectory', [])
mode = int(unit.get('RuntimeDirectoryMode', '0755'), 8)
preserve = unit.get('RuntimeDirectoryPreserve', 'no').lower()
preserve = {'1': 'yes', 'true': 'yes', 'on': 'yes', '0': 'no', 'false': 'no', 'off': 'no'}.get(preserve, preserve)
stop_timeout = seconds(unit.get('TimeoutStopSec'), 90)
note('unit: RuntimeDirectory=%s RuntimeDirectoryMode=%04o RuntimeDirectoryPreserve=%s' %
     (' '.join(rundirs), mode, preserve))

name_of = {}
for inst in instances:
    m = re.search(r'^name:\s*(\S+)', open(os.path.join(etc, inst + '.yaml')).read(), re.M)
    name_of[inst] = m.group(1) if m else inst
procs = {}


def sockets(inst):
    n = name_of[inst]
    return ['/run/tunless/%s.sock' % n, '/run/wireguard/%s.sock' % n]


def answers(inst):
    """tunlessctl show and wg show of the instance both answer: '' or what failed."""
    n = name_of[inst]
    bad = []
    for cmd in ([ctl, '-n', n, 'show'], ['wg', 'show', n]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        if r.returncode:
            bad.append('%s: exit %d %s' % (' '.join(cmd[:1] + cmd[-2:]), r.returncode, r.stderr.strip()[:160]))
    return '; '.join(bad)


def start(inst):
    for d in rundirs:
        path = os.path.join('/run', spec(d, inst))
        os.makedirs(path, 0o755, exist_ok=True)
        os.chmod(path, mode)
    for line in unit.get('ExecStartPre', []):
        r = subprocess.run(command(line, inst), capture_output=True, text=True)
        if r.returncode and not spec(line, inst).startswith('-'):
            return 'ExecStartPre %s: exit %d %s' % (line, r.returncode, r.stderr.strip())
    log = open(os.path.join(logdir, 'sd-%s.log' % inst), 'a')
    procs[inst] = subprocess.Popen(command(unit['ExecStart'], inst), stdout=log, stderr=log,
                                   stdin=subprocess.DEVNULL)
    end = time.monotonic() + 30
    while time.monotonic() < end and procs[inst].poll() is None:
        if all(os.path.exists(s) for s in sockets(inst)) and not answers(inst):
            return ''
        time.sleep(0.2)
    return 'not serving on %s after 30 s (exit %s)' % (' '.join(sockets(inst)), procs[inst].poll())


def stop(inst, sig=signal.SIGTERM, restart=False):
    """The main process signalled and reaped, ExecStopPost=, the runtime directories."""
    p = procs.pop(inst)
    p.send_signal(sig)
    try:
        p.wait(stop_timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    for line in unit.get('ExecStopPost', []):
        subprocess.run(command(line, inst))
    if preserve == 'yes' or (restart and preserve == 'restart'):
        return p.returncode
    for d in rundirs:
        shutil.rmtree(os.path.join('/run', spec(d, inst)), ignore_errors=True)
    return p.returncode


a, b = instances
try:
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=0755', 'tmpfs', '/run'], check=True)
    if os.path.exists(tmpfiles):
        r = subprocess.run(['systemd-tmpfiles', '--create', tmpfiles], capture_output=True, text=True)
        check('boot: systemd-tmpfiles --create %s' % os.path.basename(tmpfiles), r.returncode == 0, r.stderr)
        for d in ('/run/tunless', '/run/wireguard'):
            st = os.stat(d) if os.path.isdir(d) else None
            check('boot: %s made by tmpfiles.d, mode 0755' % d, st is not None and st.st_mode & 0o7777 == 0o755,
                  oct(st.st_mode & 0o7777) if st else 'missing')
    else:
        note('no tmpfiles.d file at %s' % tmpfiles)

    for inst in (a, b):
        why = start(inst)
        check('start tunless@%s: answers on %s' % (inst, ' and '.join(sockets(inst))), not why, why)
    if failures:
        sys.exit(1)

    # Another WireGuard implementation's socket, as wireguard-go makes it.
    os.makedirs('/run/wireguard', 0o755, exist_ok=True)
    other_path = '/run/wireguard/wgother.sock'
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(other_path)
    other.listen(1)

    rc = stop(a)
    check('stop tunless@%s: its daemon exited 0' % a, rc == 0, 'exit %s' % rc)
    for s in sockets(b):
        check('after stopping tunless@%s: tunless@%s\'s %s is still there' % (a, b, s), os.path.exists(s))
    why = answers(b)
    check('after stopping tunless@%s: tunless@%s answers tunlessctl show and wg show' % (a, b), not why, why)
    check('after stopping tunless@%s: the other implementation\'s %s is still there' % (a, other_path),
          os.path.exists(other_path))
    gone = [s for s in sockets(a) if os.path.exists(s)]
    check('after stopping tunless@%s: its own sockets are gone' % a, not gone, 'left: ' + ' '.join(gone))

    # A crash: SIGKILL leaves the sockets; Restart= starts the instance again.
    stop(b, signal.SIGKILL, restart=True)
    note('tunless@%s killed: %s' % (b, ', '.join('%s %s' % (s, 'left' if os.path.exists(s) else 'gone')
                                                 for s in sockets(b))))
    why = start(b)
    check('tunless@%s killed and started again (Restart=): answers on its sockets' % b, not why, why)

    rc = stop(b)
    check('stop tunless@%s: its daemon exited 0' % b, rc == 0, 'exit %s' % rc)
    gone = [s for s in sockets(b) if os.path.exists(s)]
    check('stop tunless@%s: its own sockets are gone' % b, not gone, 'left: ' + ' '.join(gone))
    check('both stopped: the other implementation\'s %s is still there' % other_path, os.path.exists(other_path))
    other.close()
finally:
    for p in procs.values():
        p.kill()
        p.wait()
sys.exit(1 if failures else 0)
