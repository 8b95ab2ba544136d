"""The meshcat server of ``biped-sim run --view``: local unless asked, and gone with its run.

meshcat's own server (``meshcat.servers.zmqserver``) takes its scene over ZMQ on 127.0.0.1 but
serves the browser on every interface, and ``meshcat.Visualizer`` starts it in a session of its
own that outlives a run ended by a signal (it only kills it ``atexit``). This module runs the
same server (the ``ZMQWebSocketBridge``) with two differences:

* the HTTP/websocket side listens on one address, ``127.0.0.1`` unless the user passes another
  (``--view-address``); the ZMQ side, which only the run talks to, stays on 127.0.0.1;
* it dies with the process that started it: on Linux the kernel sends it SIGTERM when its parent
  dies (``prctl(PR_SET_PDEATHSIG)``), however the parent died, SIGKILL included; elsewhere a
  thread polls the parent's pid. The run also stops it when it ends (:func:`stop_server`).

It runs in a session of its own (``start_new_session``) so that a Ctrl-C in the terminal reaches
the run, which stops it after writing its outputs, and not the server in mid-frame.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

DEFAULT_ADDRESS = "127.0.0.1"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL = 0.5  # [s] where prctl is missing
STOP_TIMEOUT = 2.0  # [s] after SIGTERM before SIGKILL


class ViewServerError(RuntimeError):
    """The server could not be started (the message says why)."""


def start_server(address: str = DEFAULT_ADDRESS) -> tuple[subprocess.Popen, str, str]:
    """Start the server for this process.

    Args:
        address: Where the browser side listens (``127.0.0.1``: this machine only;
            ``0.0.0.0``: every interface).

    Returns:
        (the server process, its ZMQ url, its web url).

    Raises:
        ViewServerError: it exited before it listened (the message has its last error line).
    """
    # Its stderr goes to an unnamed file, read only if it fails: a pipe nobody reads would
    # block it once full, and a closed one would make its logging fail.
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", __name__, "--address", address, "--parent",
             str(os.getpid())],
            stdout=subprocess.PIPE, stderr=errors, text=True, start_new_session=True)
        urls = _read_urls(proc)
        if len(urls) < 2:
            stop_server(proc)
            errors.seek(0)
            detail = errors.read().strip().splitlines()[-1:]
            raise ViewServerError(f"the meshcat server did not start on {address}"
                                  + (f": {detail[0]}" if detail else ""))
    return proc, urls["zmq_url"], urls["web_url"]


def _read_urls(proc: subprocess.Popen) -> dict[str, str]:
    """The ``zmq_url`` and ``web_url`` lines the server prints once it listens (fewer if it
    exits first)."""
    urls: dict[str, str] = {}
    while len(urls) < 2:
        line = proc.stdout.readline()
        if not line:  # it exited
            break
        key, sep, value = line.strip().partition("=")
        if sep and key in ("zmq_url", "web_url"):
            urls[key] = value
    return urls


def stop_server(proc: subprocess.Popen) -> None:
    """End the server (SIGTERM, then SIGKILL after ``STOP_TIMEOUT``) and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _die_with_parent(parent: int) -> None:
    """Be ended when ``parent`` ends (module docstring); exit now if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        sys.exit(0)
    if not armed:
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(PARENT_POLL)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, daemon=True).start()


def _url_host(address: str) -> str:
    """The host to print in the URL for a listening address."""
    if address in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return f"[{address}]" if ":" in address else address


def main(argv: list[str] | None = None) -> None:
    """``python -m biped_contact_sim.record.view_server --address A --parent PID``: print
    ``zmq_url=...`` and ``web_url=...`` (as meshcat's server does) and serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=DEFAULT_ADDRESS)
    parser.add_argument("--parent", type=int, required=True)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    from meshcat.servers.zmqserver import ZMQWebSocketBridge

    class Bridge(ZMQWebSocketBridge):
        """meshcat's bridge whose HTTP server listens on ``args.address`` only."""

        def make_app(self):
            app = super().make_app()
            listen = app.listen

            def listen_on_address(port, **kwargs):
                return listen(port, address=args.address, **kwargs)

            app.listen = listen_on_address
            return app

    bridge = Bridge(host=DEFAULT_ADDRESS)  # the ZMQ side: this machine only
    bridge.web_url = f"http://{_url_host(args.address)}:{bridge.fileserver_port}/static/"
    print(f"zmq_url={bridge.zmq_url}")
    print(f"web_url={bridge.web_url}")
    bridge.run()


if __name__ == "__main__":
    main()
