"""``--view``: the meshcat server listens on 127.0.0.1 unless asked, and is gone with its run
however the run ends (SIGINT, SIGTERM, SIGHUP, SIGKILL): no process left, no socket open."""

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import biped_sim, wait_until

pytest.importorskip("meshcat")

SERVER_MODULE = "biped_contact_sim.record.view_server"


def listening(port: int) -> set[str]:
    """Local addresses with a TCP socket listening on ``port`` (from /proc/net/tcp{,6})."""
    found = set()
    for table, size in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                if size == 8:  # IPv4, little-endian
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:  # IPv6: four little-endian 32-bit words
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def servers_of(pid: int) -> list[int]:
    """Pids of the view servers started by process ``pid`` (their command line names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SERVER_MODULE.encode() in argv and str(pid).encode() in argv:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead and waiting for its new parent to reap it, holds
    no socket and runs nothing: not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def start_viewed_run(tmp_path, *extra):
    """A long ``run ramp --view`` and the port of its web server, once it listens."""
    proc = biped_sim("run", "ramp", "--duration", "600", "--no-plots", "--no-replay",
                     *(extra or ["--view"]), "--out", str(tmp_path))
    for line in proc.stdout:
        match = re.match(r"http://(\S+):(\d+)/static/", line.strip())
        if match:
            return proc, match.group(1), int(match.group(2))
    out, err = proc.communicate()
    raise AssertionError(f"no viewer URL printed:\n{err}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                                    signal.SIGKILL])
def test_the_view_server_is_local_and_ends_with_its_run(tmp_path, signum):
    proc, host, port = start_viewed_run(tmp_path)
    try:
        assert host == "127.0.0.1"
        servers = servers_of(proc.pid)
        assert len(servers) == 1
        assert listening(port) == {"127.0.0.1"}  # nothing on 0.0.0.0 or ::
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode in (128 + signum, -signal.SIGKILL)
        assert "Traceback" not in err
        wait_until(lambda: not servers_of(proc.pid) and not listening(port), timeout=10,
                   what="the server's end")
        assert not alive(servers[0])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_view_listens_where_asked(tmp_path):
    proc, host, port = start_viewed_run(tmp_path, "--view-address", "0.0.0.0")
    try:
        assert host == socket.gethostname()
        assert listening(port) == {"0.0.0.0"}
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err
        wait_until(lambda: not servers_of(proc.pid) and not listening(port), timeout=10,
                   what="the server's end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_view_server_whose_parent_is_gone_exits_at_once():
    """The race the parent-death signal leaves open: a parent that died before the server
    armed it. The server sees another parent and leaves without serving."""
    done = subprocess.run([sys.executable, "-m", SERVER_MODULE, "--parent", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "web_url" not in done.stdout
