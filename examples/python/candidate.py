#!/usr/bin/env python3
"""A splitbrain candidate in Python: a Redis lease with a fencing token.

It follows docs/candidates.md and nothing else: it reads the SPLITBRAIN_* environment, takes
the lock with SET NX PX and draws its token with INCR in the same Lua script, renews with a
compare-and-PEXPIRE, writes to the resource while its own deadline (taken from the time the
acquire/renew was SENT) has not passed, and resigns on SIGTERM.

Run it (Debian packages python3 and python3-redis, installed into a cached image):
  splitbrain run --store redis --candidate-cmd examples/python/candidate.py \
      --candidate-packages python3,python3-redis --nemesis pause-leader --time 30s
"""
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import redis

# KEYS[1] lock, KEYS[2] fence counter; ARGV[1] holder, ARGV[2] ttl ms. The token is drawn in
# the same script as the lock, so token order is lock order.
ACQUIRE = ("if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
           "return redis.call('incr', KEYS[2]) end return 0")
RENEW = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
         "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0")
RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0")

_out = threading.Lock()


def emit(kind, **fields):
    """Print one event. t is taken inside the lock, so print order is time order."""
    with _out:
        event = {"t": time.monotonic_ns(), "kind": kind}  # CLOCK_MONOTONIC on Linux
        event.update(fields)
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()  # one line at a time; a pipe is block-buffered otherwise


def duration(text):
    """Parse a Go duration such as 2s, 50ms or 1m30s into seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        sys.exit(f"candidate.py: {text!r} is not a Go duration such as 2s or 50ms")
    return sum(float(n) * units[u] for n, u in parts)


def env(name, default=None):
    value = os.environ.get(name, "")
    if value:
        return value
    if default is None:
        print(f"candidate.py: {name} is not set", file=sys.stderr)
        sys.exit(64)
    return default


def main():
    node = env("SPLITBRAIN_NODE_ID")
    if env("SPLITBRAIN_STORE") != "redis":
        print("candidate.py: this example runs on SPLITBRAIN_STORE=redis only", file=sys.stderr)
        sys.exit(64)
    host, port = env("SPLITBRAIN_STORE_ENDPOINTS").split(",")[0].rsplit(":", 1)
    resource = env("SPLITBRAIN_RESOURCE_URL").rstrip("/") + "/write"
    ttl = duration(env("SPLITBRAIN_LEASE_TTL", "2s"))
    interval = duration(env("SPLITBRAIN_WRITE_INTERVAL", "50ms"))
    renew = duration(env("SPLITBRAIN_RENEW_INTERVAL", "")) if os.environ.get("SPLITBRAIN_RENEW_INTERVAL") else ttl / 3
    retry = duration(env("SPLITBRAIN_RETRY_INTERVAL", "50ms"))
    election = env("SPLITBRAIN_ELECTION", "splitbrain")
    lock_key, fence_key = f"example:lock:{election}", f"example:fence:{election}"
    ttl_ms = int(ttl * 1000)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    # redis-py opens a new connection (resolving the host name again) after a failed one, so
    # a store node that comes back on another address is found. No retries: a retried
    # acquire after a lost reply would be a second, different attempt.
    timeout = max(renew, 0.1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=timeout)
    http_timeout = min(max(4 * interval, 0.2), 2.0)
    holder = f"{node}-{uuid.uuid4().hex[:12]}"  # unique across restarts of this node
    seq = 0

    def release():
        try:
            r.eval(RELEASE, 1, lock_key, holder)
        except redis.RedisError as e:
            print(f"release: {e}", file=sys.stderr)

    while not stop.is_set():
        emit("campaigning")
        token, sent = 0, 0.0
        while not stop.is_set():
            sent = time.monotonic()
            try:
                token = int(r.eval(ACQUIRE, 2, lock_key, fence_key, holder, ttl_ms))
            except redis.RedisError as e:
                emit("error", reason=f"acquire: {e}")
            if token > 0:
                break
            stop.wait(retry)
        if stop.is_set():
            # SIGTERM while campaigning: never announce a term won after it; give it back.
            if token > 0:
                release()
            break
        deadline = sent + ttl * 0.99  # from the SEND time: the server's TTL ran from no later
        emit("elected", token=token)
        next_renew = sent + renew
        reason = None
        while reason is None:
            if stop.is_set():
                reason = "sigterm"
                break
            now = time.monotonic()
            if now >= next_renew:
                renew_sent = now
                try:
                    ok = int(r.eval(RENEW, 1, lock_key, holder, ttl_ms))
                except redis.RedisError as e:
                    ok = -1
                    print(f"renew: {e}", file=sys.stderr)
                # BEGIN lease-check
                if ok == 1:
                    deadline = renew_sent + ttl * 0.99
                elif ok == 0:
                    reason = "lock taken over"
                    break
                # END lease-check
                next_renew = renew_sent + renew
            # BEGIN lease-check
            if time.monotonic() >= deadline:
                reason = "lease expired (local deadline)"
                break
            # END lease-check
            seq += 1
            body = json.dumps({"node": node, "token": token, "write_id": f"{holder}-{seq}"}).encode()
            call_t = time.monotonic_ns()
            result = "unknown"
            try:
                req = urllib.request.Request(resource, data=body, headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=http_timeout) as resp:
                    result = "accepted" if resp.status == 200 else "unknown"
            except urllib.error.HTTPError as e:
                result = "rejected" if 400 <= e.code < 500 else "unknown"
            except OSError:
                pass  # no answer in time: the write may or may not have been applied
            emit("write", token=token, write_id=f"{holder}-{seq}", call_t=call_t, result=result)
            if result == "rejected":
                reason = "fenced: the resource saw a newer token"
                break
            stop.wait(interval)
        # The belief ends here, before the lock is given up: no gap can hide an overlap.
        emit("stepped-down", reason=reason)
        release()
    sys.exit(0)


if __name__ == "__main__":
    main()
