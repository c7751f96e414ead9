#!/usr/bin/env python3
"""An application of one's own behind the project's leader-election sidecar (Python, stdlib).

It follows docs/candidates.md and nothing else (section 1's environment, section 2's event
lines, section 3's writes, section 6 "Your own application behind the sidecar"): it starts
$SPLITBRAIN_BIN lease-sidecar as a child named "sidecar", hands it a listening socket on the
loopback, polls GET /leader every TTL/4, leads while the answer says leader with the same token,
and writes to the resource with that token. It keeps the sidecar running as a kubelet would.

Run it on the kubernetes store (Debian python3, installed into a cached image):
  splitbrain run --store kubernetes --candidate-cmd examples/sidecar/app.py \
      --candidate-packages python3 --nemesis kill-leader --time 30s
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

_out = threading.Lock()


def emit(kind, **fields):
    with _out:
        event = {"t": time.monotonic_ns(), "kind": kind}
        event.update(fields)
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def duration(text):
    """Parse a Go duration such as 2s, 50ms or 1m30s into seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        sys.exit(f"app.py: {text!r} is not a Go duration such as 2s or 50ms")
    return sum(float(n) * units[u] for n, u in parts)


def env(name, default=None):
    value = os.environ.get(name, "")
    if value:
        return value
    if default is None:
        print(f"app.py: {name} is not set", file=sys.stderr)
        sys.exit(64)
    return default


class Sidecar:
    """The sidecar child, restarted a second after it exits, as a kubelet restarts a container."""

    def __init__(self, binary, listener, stop):
        self.binary, self.listener, self.stop = binary, listener, stop
        self.proc = None
        threading.Thread(target=self._supervise, daemon=True).start()

    def _supervise(self):
        fd = self.listener.fileno()
        child_env = dict(os.environ, SPLITBRAIN_SIDECAR_LISTEN_FD=str(fd))
        while not self.stop.is_set():
            self.proc = subprocess.Popen(["sidecar", "lease-sidecar"], executable=self.binary,
                                         env=child_env, pass_fds=(fd,))
            self.proc.wait()
            if not self.stop.is_set():
                print(f"app.py: sidecar exited ({self.proc.returncode}), restarting", file=sys.stderr)
                self.stop.wait(1.0)

    def terminate(self):
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()  # it releases its Lease
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    node = env("SPLITBRAIN_NODE_ID")
    if env("SPLITBRAIN_STORE") != "kubernetes":
        print("app.py: the sidecar elects on a Kubernetes Lease: run it with --store kubernetes", file=sys.stderr)
        sys.exit(64)
    binary = env("SPLITBRAIN_BIN")
    resource_url = env("SPLITBRAIN_RESOURCE_URL").rstrip("/")
    ttl = duration(env("SPLITBRAIN_LEASE_TTL", "2s"))
    interval = duration(env("SPLITBRAIN_WRITE_INTERVAL", "50ms"))
    poll = ttl / 4
    http_timeout = min(max(4 * interval, 0.2), 2.0)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.set_inheritable(True)
    port = listener.getsockname()[1]
    sidecar = Sidecar(binary, listener, stop)

    def ask_leader():
        """The sidecar's answer: (leader, token), or None when it did not answer."""
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=poll)
        try:
            conn.request("GET", "/leader")
            resp = conn.getresponse()
            body = json.loads(resp.read() or b"{}")
            return bool(body.get("leader")), int(body.get("token") or 0)
        except (OSError, ValueError, http.client.HTTPException):
            return None
        finally:
            conn.close()

    resource = resource_url.split("://", 1)[1]
    rhost, rport = resource.rsplit(":", 1)
    run_id = uuid.uuid4().hex[:12]  # write ids unique across restarts of this node
    seq = 0
    token = 0  # the token of the term we are in, 0 when not leading
    last = 0  # the token of the last term: a new term needs a higher one (R8: one token, one term)
    campaigning = False
    while not stop.is_set():
        if token == 0 and not campaigning:
            emit("campaigning")
            campaigning = True
        answer = ask_leader()
        if answer is None:
            stop.wait(poll)  # a slow sidecar: hold the writes, keep the term (the plain pattern)
            continue
        leader, got = answer
        if token and (not leader or got != token):
            emit("stepped-down", reason="the sidecar says not leader" if not leader else f"the sidecar reports token {got}")
            token = 0
            continue
        if not token and leader and got > last:
            token, last, campaigning = got, got, False
            emit("elected", token=token)
        if not token:
            stop.wait(poll)
            continue
        # Lead until the next poll: write every interval with the sidecar's token.
        until = time.monotonic() + poll
        while token and time.monotonic() < until and not stop.is_set():
            seq += 1
            body = json.dumps({"node": node, "token": token, "write_id": f"{node}-{run_id}-{seq}"})
            call_t = time.monotonic_ns()
            result = "unknown"
            conn = http.client.HTTPConnection(rhost, int(rport), timeout=http_timeout)
            try:
                conn.request("POST", "/write", body, {"Content-Type": "application/json"})
                status = conn.getresponse().status
                result = "accepted" if status == 200 else "rejected"
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            emit("write", token=token, write_id=f"{node}-{run_id}-{seq}", call_t=call_t, result=result)
            if result == "rejected":
                emit("stepped-down", reason="fenced: the resource refused the token")
                token = 0
                break
            stop.wait(interval)
    if token:
        emit("stepped-down", reason="sigterm")
    sidecar.terminate()


if __name__ == "__main__":
    main()
