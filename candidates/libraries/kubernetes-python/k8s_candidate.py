"""The Kubernetes Python client 22.6.0 leader election, as kubernetes/leaderelection/example.py
shows it: LeaderElection(electionconfig.Config(ConfigMapLock(name, "default", identity),
lease_duration, renew_deadline, retry_period, onstarted_leading, onstopped_leading)).run().

The library starts onstarted_leading in a thread it never stops and calls onstopped_leading
when a renewal has failed for renew_deadline (kubernetes-client/python#2075). The adapter's
onstarted_leading writes until onstopped_leading has been called: the term ends when the
library says so, or on SIGTERM. The library has no release (no ReleaseOnCancel in 22.6.0):
on SIGTERM the adapter stops writing and exits, the lease runs out.

Durations, scaled to the TTL as docs/candidates.md section 8 says for client-go, within what
electionconfig.Config accepts (retry_period >= 1 s, renew_deadline > 1.2 x retry_period,
lease_duration > renew_deadline): retry = max(1 s, 2/15 TTL), renew deadline = max(2/3 TTL,
1.25 x retry), lease = max(TTL, 1.5 x renew deadline). The library measures all of them on
the wall clock (time.time()), which clock faults move.

Store calls are not bounded (R16): ConfigMapLock makes its own CoreV1Api() and passes no
_request_timeout, and Configuration has no default timeout in 22.6.0.

No fencing token: ConfigMapLock keeps no resourceVersion of its own write and has no
leaderTransitions. The writes carry a label, the host CLOCK_MONOTONIC in microseconds when
onstarted_leading ran, which grows with every election (clock faults do not move it).
"""
# splitbrain first: importing it installs the SIGTERM/SIGINT handlers (PID 1 without one
# ignores SIGTERM; the library's imports take seconds on a loaded host), and a signal before
# the first campaigning event exits 0 at once.
import splitbrain  # isort: skip

import os
import sys
import threading
import uuid

import yaml
from kubernetes import client, config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock


def seconds(x):
    """A duration as the library stores it (str(lease_duration) in the record)."""
    x = round(x, 3)
    return int(x) if x == int(x) else x


def durations(ttl):
    retry = max(1.0, ttl * 2 / 15)
    renew = max(ttl * 2 / 3, 1.25 * retry)
    lease = max(ttl, 1.5 * renew)
    return seconds(lease), seconds(renew), seconds(retry)


def load(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    # 22.6.0 does not read the kubeconfig's tls-server-name; Configuration.assert_hostname
    # is its equivalent. Without it no call verifies once the API server is reached through
    # the fault proxy (the certificate names kube-apiserver, not the proxy).
    with open(kubeconfig) as f:
        kc = yaml.safe_load(f)
    ctx = next(c["context"] for c in kc["contexts"] if c["name"] == kc["current-context"])
    cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
    if cluster.get("tls-server-name"):
        c = client.Configuration.get_default_copy()
        c.assert_hostname = cluster["tls-server-name"]
        client.Configuration.set_default(c)


class Term:
    """One LeaderElection.run(): its callbacks and, once elected, its writes."""

    def __init__(self):
        self.lost = None  # set by onstopped_leading
        self.writer = None

    def onstarted_leading(self):
        # The library's own thread (never stopped by it).
        self.writer = threading.current_thread()
        label = splitbrain.now() // 1000
        if splitbrain.elected(label) is False:
            return  # SIGTERM came first (R10); there is no release: the lease runs out
        reason = splitbrain.lead(label, lambda: self.lost or True)
        splitbrain.stepped_down(reason or "tenure ended")

    def onstopped_leading(self):
        self.lost = "onstopped_leading: the lease was not renewed within renew_deadline"


def main():
    cfg = splitbrain.config()
    kubeconfig = os.environ.get("SPLITBRAIN_STORE_KUBECONFIG", "")
    if cfg.store != "kubernetes" or not kubeconfig:
        print("k8s_candidate: needs SPLITBRAIN_STORE=kubernetes and SPLITBRAIN_STORE_KUBECONFIG", file=sys.stderr)
        return 64
    load(kubeconfig)
    lease, renew, retry = durations(cfg.ttl)
    splitbrain.log("lease_duration=%s renew_deadline=%s retry_period=%s" % (lease, renew, retry))
    stop = splitbrain.stop

    term = None
    while not stop.is_set():
        term = Term()
        identity = "%s_%s" % (cfg.node, uuid.uuid4())  # a fresh identity per campaign
        lock = ConfigMapLock(cfg.election, "default", identity)
        conf = electionconfig.Config(lock, lease_duration=lease, renew_deadline=renew, retry_period=retry,
                                     onstarted_leading=term.onstarted_leading,
                                     onstopped_leading=term.onstopped_leading)
        splitbrain.campaigning()
        # run() blocks (acquire, then renew until a renewal fails): a daemon thread, so
        # SIGTERM is answered while it waits in a sleep or a call without a timeout.
        elector = threading.Thread(target=leaderelection.LeaderElection(conf).run, daemon=True)
        elector.start()
        while elector.is_alive() and not stop.wait(0.1):
            pass
        if term.writer is not None:
            term.writer.join()  # its stepped-down comes before the next campaigning
    if term is not None and term.writer is not None:
        term.writer.join(1.5)  # prints stepped-down (sigterm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
