"""python-etcd3 0.12.0 Lock as a leader election: client.lock(name, ttl) and acquire().

Variants (the launcher's first argument):
  shipped  the Lock as its README and docstring show it: acquire(), then work while holding
           it. Nothing renews the lease and nothing tells the holder that it expired: the
           term ends only on SIGTERM (or a 409 from the resource).
  refresh  the Lock's docstring example (etcd3/locks.py): lock.refresh() "refresh the
           timeout on the lease", here every renew interval (TTL/3), and lock.is_acquired()
           before every write; the term ends when is_acquired() does not answer True.

The lock's TTL is a lease TTL: whole seconds (LeaseGrantRequest.TTL is an integer), at least
2 s (the server's minimum lease here). Etcd3Client takes one host in 0.12.0: the adapter
dials the first endpoint only; its timeout bounds every unary call below the TTL (R16).

No fencing token: Lock keeps no revision ("# TODO: save the created revision" in
acquire) and drops the transaction's answer. The writes carry a label, the host
CLOCK_MONOTONIC in microseconds when acquire() returned True, which grows with every
acquisition (all containers share that clock; clock faults do not move it).
"""
# splitbrain first: importing it installs the SIGTERM/SIGINT handlers (PID 1 without one
# ignores SIGTERM; the library's imports take seconds on a loaded host), and a signal before
# the first campaigning event exits 0 at once.
import splitbrain  # isort: skip

import math
import sys
import threading

import etcd3


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else "shipped"
    if variant not in ("shipped", "refresh"):
        print("etcd3_candidate: variant %r: want shipped or refresh" % variant, file=sys.stderr)
        return 64
    cfg = splitbrain.config()
    if cfg.store != "etcd":
        print("etcd3_candidate: SPLITBRAIN_STORE=%s: this adapter runs on etcd" % cfg.store, file=sys.stderr)
        return 64
    stop = splitbrain.stop
    host, port = splitbrain.hostport(cfg.endpoints[0], 2379)
    ttl_s = max(2, math.ceil(cfg.ttl))
    client = etcd3.client(host=host, port=port, timeout=cfg.ttl / 2)

    while not stop.is_set():
        splitbrain.campaigning()
        lock = client.lock(cfg.election, ttl=ttl_s)
        got, call_t, last = False, None, None
        while not stop.is_set():
            call_t = splitbrain.now()
            try:
                # Short waits, so SIGTERM is looked at every second (R11); acquire() watches
                # the key in between, so a release is seen at once. With Debian's tenacity
                # 8.2 that wait raises TypeError instead (kragniz/python-etcd3#2149): a
                # contended acquire() fails at once, and this loop polls every retry interval.
                got = lock.acquire(timeout=1)
            except Exception as e:  # TypeError (above), ConnectionFailedError, ...
                msg = "acquire: %s: %s" % (type(e).__name__, e)
                if msg != last:  # one event per kind of failure, not one per poll
                    splitbrain.error(msg)
                    last = msg
                stop.wait(cfg.retry)
                continue
            if got:
                break
        if not got:
            break
        label = splitbrain.now() // 1000
        if splitbrain.elected(label, call_t=call_t) is False:
            release(lock)  # SIGTERM came first (R10): give it back unannounced
            break

        if variant == "shipped":
            reason = splitbrain.lead(label, lambda: True)
        else:
            done = threading.Event()
            threading.Thread(target=refresher, args=(lock, cfg.renew, done), daemon=True).start()
            reason = splitbrain.lead(label, lambda: still_held(lock))
            done.set()
        splitbrain.stepped_down(reason or "tenure ended")
        release(lock)
    return 0


def still_held(lock):
    """The docstring's lock.is_acquired(): a read of the lock key compared with our uuid."""
    try:
        if lock.is_acquired():
            return True
        return "lock.is_acquired() is False: the lock key expired or another holder has it"
    except Exception as e:
        return "lock.is_acquired() failed: %s" % e


def refresher(lock, every, done):
    """lock.refresh() every renew interval. Its answer (a list of keep-alive responses, TTL
    0 once the lease is gone) is not looked at: the docs do not say to."""
    while not done.wait(every):
        try:
            lock.refresh()
        except Exception as e:
            splitbrain.error("refresh: %s" % e)


def release(lock):
    try:
        lock.release()  # a compare-and-delete on our uuid: never another holder's key
    except Exception as e:
        splitbrain.log("release: %r" % e)


if __name__ == "__main__":
    sys.exit(main())
