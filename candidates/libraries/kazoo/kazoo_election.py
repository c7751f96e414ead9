"""kazoo 2.8.0 Election as a splitbrain candidate.

    candidate shipped    zk.Election(path, id).run(leader) as kazoo's Election docstring shows;
                         the leader function writes until it is stopped or fenced. kazoo never
                         tells it of a lost session (python-zk/kazoo#2).
    candidate listener   the same, plus the state listener kazoo's docs recommend (kazoo.recipe.lock
                         module docstring; docs/basic_usage.rst, "Understanding Kazoo States"):
                         SUSPENDED or LOST ends the leader function.

Nothing else: no own check of the session, the znode or a deadline.
"""
import splitbrain as sb  # first: it installs the SIGTERM handler before kazoo's slow import

import logging
import sys
import threading

from kazoo.client import KazooClient, KazooState

logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(asctime)s %(name)s %(levelname)s %(message)s")


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else ""
    if variant not in ("shipped", "listener"):
        print("usage: candidate shipped|listener", file=sys.stderr)
        sys.exit(64)
    cfg = sb.config()
    if cfg.store != "zookeeper":
        print("kazoo: SPLITBRAIN_STORE=%s, want zookeeper" % cfg.store, file=sys.stderr)
        sys.exit(64)

    # The contract's TTL is the session timeout; kazoo resolves the names on every connect
    # cycle. Everything else is kazoo's default.
    zk = KazooClient(hosts=",".join(cfg.endpoints), timeout=cfg.ttl)

    lost = threading.Event()
    lost_state = [None]
    if variant == "listener":
        def listener(state):
            # Called on kazoo's event thread; it must not block. It only records the state.
            if state in (KazooState.SUSPENDED, KazooState.LOST):
                lost_state[0] = state
                lost.set()
        zk.add_listener(listener)

    # start() gives up after its timeout and stops the client; a store that is down at our
    # start is retried (R12), nothing more.
    while not sb.stop.is_set():
        try:
            zk.start(timeout=max(cfg.ttl, 1.0))
            break
        except Exception as e:
            sb.error("kazoo start: %r" % e)
            sb.stop.wait(cfg.retry)
    if sb.stop.is_set():
        zk.stop()
        sys.exit(0)

    election = zk.Election("/splitbrain/%s/kazoo-election" % cfg.election, cfg.node)
    sb.on_stop(election.cancel)  # Election.cancel: leave a pending campaign (SIGTERM, R10)
    call_t = [0]

    def leader():
        # The token is the sequence number of the election lock's own znode
        # (<uuid>__lock__0000000042): ZooKeeper hands sequence numbers out in creation order,
        # and the lowest live one holds the lock. +1 because the first one is 0.
        token = int(election.lock.node.rsplit("__lock__", 1)[1]) + 1
        if variant == "listener":
            lost.clear()
            if zk.state != KazooState.CONNECTED:  # a state change before the clear
                sb.log("won the lock in state %s: not leading" % zk.state)
                return
        if not sb.elected(token, call_t[0]):
            return  # SIGTERM while campaigning: the with-block of run() releases the lock
        if variant == "listener":
            still = lambda: True if not lost.is_set() else "kazoo state %s" % lost_state[0]
        else:
            still = lambda: True  # kazoo tells the leader function nothing
        reason = sb.lead(token, still)
        sb.stepped_down(reason or "leader function ended")
        # Returning ends run()'s `with self.lock`, which deletes the znode.

    last_err = None
    while not sb.stop.is_set():
        sb.campaigning()
        call_t[0] = sb.now()  # before run() sends its create: never later than the real send
        try:
            election.run(leader)
            last_err = None
        except Exception as e:  # a KazooException out of the lock's acquire or release
            if repr(e) != last_err:
                sb.error("election.run: %r" % e)
                last_err = repr(e)
            # The Lock retries connection loss and session expiry inside acquire() by itself,
            # so what gets out is lasting (ConnectionClosedError once kazoo stopped
            # reconnecting): try again after a session timeout, not every retry interval.
            sb.stop.wait(max(cfg.retry, cfg.ttl))
    try:
        zk.stop()
        zk.close()
    except Exception as e:
        sb.log("stop: %r" % e)
    sys.exit(0)


if __name__ == "__main__":
    main()
