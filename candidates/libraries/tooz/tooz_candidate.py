"""OpenStack tooz 3.1.0 leader election as its tutorial shows it, on ZooKeeper or Redis.

The tutorial (doc/source/user/tutorial/leader_election.rst, examples/leader_election.py):
get_coordinator(url, member_id), start(), create_group + join_group,
watch_elected_as_leader(group, callback), then heartbeat() and run_watchers() in a loop.
The coordinator tutorial recommends start(start_heart=True) for the heartbeat, so the heart
thread beats here and the loop only runs the watchers.

tooz has three events: MemberJoinedGroup, MemberLeftGroup and LeaderElected. There is none
for losing leadership, so the adapter leads from the LeaderElected callback until tooz calls
that callback again (a new election of this member, which the Redis driver can do) or
SIGTERM. Nothing else ends a term: that is the library as shipped. tooz's docs recommend
nothing more for a leader (get_leader() is offered "to retrieve the leader of a group", not
as a check), so there is no "as recommended" variant.

No fencing token: tooz exposes neither the ZooKeeper lock znode nor the Redis lock value.
The writes carry a label, the host CLOCK_MONOTONIC in microseconds when LeaderElected
arrived, which grows with every election (all containers share the host's monotonic clock;
FAKETIME_DONT_FAKE_MONOTONIC keeps clock faults off it).
"""
# splitbrain first: importing it installs the SIGTERM/SIGINT handlers (PID 1 without one
# ignores SIGTERM; the library's imports take seconds on a loaded host), and a signal before
# the first campaigning event exits 0 at once.
import splitbrain  # isort: skip

import logging
import math
import sys
import threading
import uuid

import tooz
from tooz import coordination


# tooz and kazoo report what they see ("Unable to heartbeat lock", session states) through
# logging: keep it in the node's log (stderr), never on stdout.
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(asctime)s %(name)s %(levelname)s %(message)s")


def backend_url(cfg):
    # tooz reads "timeout" with int(): whole seconds only. Rounded up so the session or lock
    # is never shorter than the contract's TTL.
    ttl_s = max(1, math.ceil(cfg.ttl))
    if cfg.store == "zookeeper":
        # The kazoo session timeout is the TTL (tooz passes "timeout" to KazooClient);
        # kazoo resolves the names on every connect (R12). The first endpoint is the URL's
        # host, the others "hosts" options, as the driver's docstring shows.
        rest = "".join("&hosts=" + e for e in cfg.endpoints[1:])
        return "zookeeper://%s?timeout=%d%s" % (cfg.endpoints[0], ttl_s, rest)
    if cfg.store == "redis":
        # lock_timeout: the leader lock's expiry (int seconds), renewed by the heart every
        # lock_timeout/2. "timeout" is redis-py's socket timeout (int seconds, default 30):
        # half the TTL, at least 1 s, the shortest bound the driver accepts (R16).
        sock = max(1, int(cfg.ttl / 2))
        return "redis://%s?timeout=%d&lock_timeout=%d&membership_timeout=%s" % (
            cfg.endpoints[0], sock, ttl_s, cfg.ttl)
    print("tooz_candidate: SPLITBRAIN_STORE=%s: this adapter runs on zookeeper or redis" % cfg.store,
          file=sys.stderr)
    sys.exit(64)


class Tenure(threading.Thread):
    """One term: writes from the LeaderElected callback until told to end."""

    def __init__(self, label):
        super().__init__(daemon=True)
        self.label = label
        self.reason = None   # set by the main thread to end the term
        self.fenced = False  # the resource said 409: the main thread stands down

    def run(self):
        reason = splitbrain.lead(self.label, lambda: self.reason or True)
        splitbrain.stepped_down(reason or "tenure ended")
        self.fenced = bool(reason and reason.startswith("fenced"))


def main():
    cfg = splitbrain.config()
    url = backend_url(cfg)
    group = cfg.election.encode()
    # tooz: "a unique identifier identifying the running program"; unique per process, so a
    # restarted node never collides with its own stale Redis membership.
    member = ("%s-%s" % (cfg.node, uuid.uuid4().hex[:8])).encode()
    stop = splitbrain.stop
    state = {"tenure": None, "call_t": None}

    def on_elected(event):
        # LeaderElected arrives inside run_watchers(), on this (the main) thread.
        if stop.is_set():
            return  # R10: never announce after SIGTERM; coordinator.stop() gives it back
        old = state["tenure"]
        if old is not None and old.is_alive():
            # tooz elected this member again (Redis: its old lock had expired and it won a
            # new one): the old term ends, a new one starts.
            old.reason = "tooz elected this member again (a new LeaderElected event)"
            old.join()
            splitbrain.campaigning()  # R9: a new term follows a step-down
            state["call_t"] = None    # the winning call was sent before that line
        label = splitbrain.now() // 1000
        if splitbrain.elected(label, call_t=state["call_t"]) is False:
            return  # SIGTERM came first (R10): coordinator.stop() gives the lock back
        t = Tenure(label)
        state["tenure"] = t
        t.start()

    splitbrain.campaigning()
    coord = None
    while not stop.is_set():
        coord = coordination.get_coordinator(url, member)
        try:
            coord.start(start_heart=True)
            try:
                coord.create_group(group).get()
            except coordination.GroupAlreadyExist:
                pass
            try:
                coord.join_group(group).get()
            except coordination.MemberAlreadyExist:
                pass
            break
        except tooz.ToozError as e:
            splitbrain.error("start: %s" % e)
            try:
                coord.stop()
            except Exception:
                pass
            coord = None
            stop.wait(max(cfg.retry, 0.5))
    if coord is None:
        return 0
    coord.watch_elected_as_leader(group, on_elected)

    while not stop.is_set():
        state["call_t"] = splitbrain.now()  # before the acquire inside run_watchers
        try:
            coord.run_watchers()
        except tooz.ToozError as e:
            splitbrain.error("run_watchers: %s" % e)
        t = state["tenure"]
        if t is not None and not t.is_alive() and t.fenced:
            # The contract's step-down after a 409: stand down through tooz.
            state["tenure"] = None
            try:
                coord.stand_down_group_leader(group)
            except (tooz.ToozError, tooz.NotImplemented) as e:
                splitbrain.log("stand_down_group_leader: %r" % e)
            splitbrain.campaigning()
        stop.wait(cfg.retry)

    t = state["tenure"]
    if t is not None and t.is_alive():
        t.join(1.5)  # it prints stepped-down (sigterm) before anything is given up
    try:
        coord.stop()  # leaves the group and releases the leader lock (ZooKeeper: closes the session)
    except Exception as e:
        splitbrain.log("coordinator stop: %r" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
