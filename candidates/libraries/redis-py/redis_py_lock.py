"""redis-py 4.3.4 Lock as a splitbrain candidate.

    candidate shipped   r.lock(name, timeout=TTL) as the Lock docstrings show, used the way a
                        lock is used: acquire, do the work the lock protects, release. The work
                        is TTL/4 / write interval writes (a job sized well below the lock's
                        timeout, as a user sizes `timeout`), then release() and campaign
                        again. No renewal: the
                        Lock has none, and nothing tells the holder its key expired until
                        release() raises LockNotOwnedError afterwards.
    candidate extend    the leader holds the lock for its whole tenure, calling
                        extend(TTL, replace_ttl=True) every renew interval (the active/passive
                        use redis-py#1014 added it for) and owned() before every write; it steps
                        down when either says the lock is gone or raises.

The Lock has no fencing token. The writes carry a label drawn with INCR on a separate key right
after each acquire: it grows with every acquisition, but it is a second command, so it orders
the INCRs, not the grants. These recipes run on the unfenced resource.
"""
import splitbrain as sb  # first: it installs the SIGTERM handler before redis's slow import

import sys
import time

import redis
from redis.exceptions import LockNotOwnedError, RedisError


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else ""
    if variant not in ("shipped", "extend"):
        print("usage: candidate shipped|extend", file=sys.stderr)
        sys.exit(64)
    cfg = sb.config()
    if cfg.store != "redis":
        print("redis-py: SPLITBRAIN_STORE=%s, want redis" % cfg.store, file=sys.stderr)
        sys.exit(64)
    host, port = sb.hostport(cfg.endpoints[0], 6379)
    # socket_timeout and socket_connect_timeout are unset by default, which waits for ever on
    # a silent server (docs/candidates.md section 8): bound every call below the TTL (R16).
    # redis-py dials by name again after a failed connection (R12).
    bound = cfg.ttl / 3
    r = redis.Redis(host=host, port=port, socket_timeout=bound, socket_connect_timeout=bound)
    name = "splitbrain:%s:redis-py-lock" % cfg.election
    label_key = name + ":label"
    lock = r.lock(name, timeout=cfg.ttl)

    def release():
        try:
            lock.release()
        except LockNotOwnedError as e:  # the only word the shipped Lock gives of an expiry
            sb.error("release: %s" % e)
        except RedisError as e:
            sb.error("release: %r" % e)

    last_err = None
    while not sb.stop.is_set():
        sb.campaigning()
        got, call_t = False, 0
        # acquire(blocking=False) polled every retry interval: the loop blocking mode runs
        # itself (sleep 0.1 s), ours so that SIGTERM is seen between attempts (R10) and call_t
        # is the send time of the SET NX PX that won.
        while not sb.stop.is_set():
            call_t = sb.now()
            try:
                got = lock.acquire(blocking=False)
                last_err = None
            except RedisError as e:
                if repr(e) != last_err:
                    sb.error("acquire: %r" % e)
                    last_err = repr(e)
            if got:
                break
            sb.stop.wait(cfg.retry)
        if not got:
            break
        try:
            label = int(r.incr(label_key))
        except RedisError as e:
            sb.error("label INCR: %r" % e)
            release()
            sb.stop.wait(cfg.retry)
            continue
        if not sb.elected(label, call_t):
            release()  # SIGTERM while campaigning: give the lock back unannounced
            break

        if variant == "shipped":
            # The job is a number of writes, not a time: a pause inside it leaves the rest
            # of the job to do, as it would for real work. Counting time instead would be a
            # local deadline, a safety the Lock does not have. A quarter of the timeout at
            # the nominal write interval: the margin a user leaves (TTL/2 overran the TTL
            # on a loaded host without any fault).
            left = [max(1, round(cfg.ttl / 4 / cfg.interval))]

            def still():
                left[0] -= 1
                return True if left[0] >= 0 else "job done"
        else:
            next_extend = call_t / 1e9 + cfg.renew  # time.monotonic() is the same clock

            def still():
                nonlocal next_extend
                now = time.monotonic()
                if now >= next_extend:
                    try:
                        lock.extend(cfg.ttl, replace_ttl=True)
                    except LockNotOwnedError as e:
                        return "extend: %s" % e
                    except RedisError as e:
                        return "extend: %r" % e
                    next_extend = now + cfg.renew
                try:
                    if not lock.owned():
                        return "owned() is False"
                except RedisError as e:
                    return "owned(): %r" % e
                return True

        reason = sb.lead(label, still)
        sb.stepped_down(reason or "lock released")
        release()
    sys.exit(0)


if __name__ == "__main__":
    main()
