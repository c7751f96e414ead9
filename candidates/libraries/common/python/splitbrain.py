"""The splitbrain candidate contract for Python adapters (docs/candidates.md, contract 1).

It sits next to every Python adapter in /splitbrain-lib/, so an adapter does `import
splitbrain` and holds only its library's election calls. It has no election logic: it reads
the environment, prints event lines, writes to the resource and turns SIGTERM/SIGINT into
the Event `stop`. What the adapter does with that (when it campaigns, when it believes it
leads, how it resigns) is the library's business.

    import splitbrain                  # first: installs the SIGTERM/SIGINT handlers
    cfg = splitbrain.config()          # exits 64 on a bad environment
    splitbrain.campaigning()
    ...                                # the library's acquire
    splitbrain.elected(token, call_t)
    reason = splitbrain.lead(token, still_leader)   # writes every write interval
    splitbrain.stepped_down(reason)    # before resigning through the library
"""
import os
import signal
import sys
import threading

# Set on SIGTERM or SIGINT. The handler goes in before anything else is imported: PID 1
# without a handler ignores SIGTERM, and on a loaded host the imports below and the
# library's take seconds. Until the adapter first campaigns there is nothing to resign, so
# a signal then ends the process at once (exit 0).
stop = threading.Event()
_campaigned = False


def _early_signal(signum, frame):
    stop.set()
    if not _campaigned:
        os._exit(0)


signal.signal(signal.SIGTERM, _early_signal)
signal.signal(signal.SIGINT, _early_signal)

import json  # noqa: E402 (after the handler, on purpose)
import re  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
import uuid  # noqa: E402

CONTRACT = "1"

_out = threading.Lock()
_cfg = None
_seq = 0
_seq_lock = threading.Lock()
# Unique per process: write ids stay unique across restarts of the node (R7).
_run = uuid.uuid4().hex[:12]
# Without this urllib would follow *_proxy variables of a test host; the resource is local.
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_on_stop = []


class Config:
    """The SPLITBRAIN_* environment; durations are float seconds."""

    def __init__(self, node, store, endpoints, resource_url, ttl, interval, renew, retry, election):
        self.node = node                  # SPLITBRAIN_NODE_ID
        self.store = store                # SPLITBRAIN_STORE
        self.endpoints = endpoints        # SPLITBRAIN_STORE_ENDPOINTS as a list of "host:port"
        self.resource_url = resource_url  # SPLITBRAIN_RESOURCE_URL without a trailing slash
        self.ttl = ttl                    # SPLITBRAIN_LEASE_TTL (default 2 s)
        self.interval = interval          # SPLITBRAIN_WRITE_INTERVAL (default 50 ms)
        self.renew = renew                # SPLITBRAIN_RENEW_INTERVAL (default TTL/3)
        self.retry = retry                # SPLITBRAIN_RETRY_INTERVAL (default 50 ms)
        self.election = election          # SPLITBRAIN_ELECTION (default "splitbrain")
        # The library helpers' write timeout: 2 s, the top of the Go runtime's clamp (why:
        # docs/libraries.md, "How a library runs"). No fault cuts the harness's resource off, so
        # only a loaded host answers later; a write given up sooner could land after the job had
        # released the lock and a next tenure had written.
        self.http_timeout = 2.0

    def __repr__(self):
        return "Config(%s)" % ", ".join("%s=%r" % kv for kv in vars(self).items())


def log(msg):
    """A line for the node's log (stderr), never an event."""
    print("splitbrain: %s" % msg, file=sys.stderr, flush=True)


def _fail(msg):
    print("splitbrain: %s" % msg, file=sys.stderr, flush=True)
    sys.exit(64)


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(name, text):
    """A Go duration (2s, 50ms, 1m30s, 0) in float seconds; exits 64 naming the variable."""
    if text == "0":
        return 0.0
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        _fail("%s=%r is not a Go duration such as 2s or 50ms" % (name, text))
    return sum(float(n) * _UNITS[u] for n, u in parts)


def config():
    """Read the environment once (R15). Missing required variables are all named at once,
    with exit code 64; so is a contract version other than 1."""
    global _cfg
    if _cfg is not None:
        return _cfg
    env = lambda k: os.environ.get(k, "")  # the harness never sets a variable to ""
    if env("SPLITBRAIN_CONTRACT") not in ("", CONTRACT):
        _fail("SPLITBRAIN_CONTRACT=%s: this helper speaks contract %s only" % (env("SPLITBRAIN_CONTRACT"), CONTRACT))
    store = env("SPLITBRAIN_STORE")
    required = ["SPLITBRAIN_NODE_ID", "SPLITBRAIN_STORE", "SPLITBRAIN_RESOURCE_URL"]
    required.append("SPLITBRAIN_PEERS" if store == "none" else "SPLITBRAIN_STORE_ENDPOINTS")
    missing = [k for k in required if not env(k)]
    if missing:
        _fail("required variable(s) not set: %s" % ", ".join(missing))
    node = env("SPLITBRAIN_NODE_ID")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", node):
        _fail("SPLITBRAIN_NODE_ID=%r: letters, digits, -_. only" % node)
    ttl = duration("SPLITBRAIN_LEASE_TTL", env("SPLITBRAIN_LEASE_TTL") or "2s")
    interval = duration("SPLITBRAIN_WRITE_INTERVAL", env("SPLITBRAIN_WRITE_INTERVAL") or "50ms")
    renew = duration("SPLITBRAIN_RENEW_INTERVAL", env("SPLITBRAIN_RENEW_INTERVAL")) if env("SPLITBRAIN_RENEW_INTERVAL") else ttl / 3
    retry = duration("SPLITBRAIN_RETRY_INTERVAL", env("SPLITBRAIN_RETRY_INTERVAL") or "50ms")
    if ttl <= 0:
        _fail("SPLITBRAIN_LEASE_TTL must be > 0")
    election = env("SPLITBRAIN_ELECTION") or "splitbrain"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", election):
        _fail("SPLITBRAIN_ELECTION=%r: letters, digits, -_. only" % election)
    endpoints = [e.strip() for e in env("SPLITBRAIN_STORE_ENDPOINTS").split(",") if e.strip()]
    _cfg = Config(node, store, endpoints, env("SPLITBRAIN_RESOURCE_URL").rstrip("/"),
                  ttl, interval, renew, retry, election)
    return _cfg


def hostport(endpoint, default_port):
    """("host", port) of one "host:port" endpoint."""
    host, _, port = endpoint.rpartition(":")
    return (host, int(port)) if host else (endpoint, default_port)


def on_stop(fn):
    """Run fn() once, in a thread of its own, when SIGTERM/SIGINT arrives (e.g. to cancel a
    blocking campaign call of the library). Not in the signal handler itself: the main thread
    may hold a lock fn needs."""
    _on_stop.append(fn)


def _on_signal(signum, frame):
    if not _campaigned:
        stop.set()
        sys.stdout.flush()
        os._exit(0)
    if stop.is_set():
        return
    stop.set()
    for fn in _on_stop:
        threading.Thread(target=_run_stop_hook, args=(fn,), daemon=True).start()
    # R11: the harness SIGKILLs after 5 s. A library that hangs while resigning is said in
    # the log, not hidden: exit status 3.
    t = threading.Timer(4.0, _overdue)
    t.daemon = True
    t.start()


def _run_stop_hook(fn):
    try:
        fn()
    except Exception as e:  # the hook is the library's call; its failure is log material
        log("stop hook %s: %r" % (getattr(fn, "__name__", fn), e))


# The full handler (hooks, watchdog) replaces the early one; import this module before the
# library, so that both are in place as early as possible.
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def _overdue():
    log("still running 4 s after SIGTERM: exiting with status 3")
    sys.stdout.flush()
    os._exit(3)


def now():
    """Host CLOCK_MONOTONIC in ns, for call_t."""
    return time.monotonic_ns()


def emit(kind, **fields):
    """Print one event line. t is read inside the output lock (R2), so print order is time
    order across threads; fields with value None are left out."""
    with _out:
        event = {"t": time.monotonic_ns(), "kind": kind}
        event.update((k, v) for k, v in fields.items() if v is not None)
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()  # R1


def campaigning():
    """Before the first store call of every campaign (R9). No "clock" field: the library's
    lease decisions are its own, not taken on the contract's clock file (R13). From the
    first one on, SIGTERM sets stop and the adapter resigns (before it, SIGTERM exits)."""
    global _campaigned
    with _out:
        if stop.is_set():
            return  # the adapter's loop sees stop next
        _campaigned = True
    emit("campaigning")


def elected(token, call_t=None):
    """From now on this process believes it leads with token (an int >= 1). call_t: host
    CLOCK_MONOTONIC ns when the acquire that won was sent, if the adapter knows it.

    Returns False and prints nothing once stop is set (R10: no elected after SIGTERM); the
    adapter then gives the lock back through the library without leading."""
    with _out:  # the check and the line together: a signal handler never takes _out
        if stop.is_set():
            return False
        event = {"t": time.monotonic_ns(), "kind": "elected", "token": int(token)}
        if call_t is not None:
            event["call_t"] = call_t
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return True


def stepped_down(reason):
    """The belief has ended: print it before resigning through the library (R9)."""
    emit("stepped-down", reason=_text(reason, "stepped down"))


def error(reason):
    emit("error", reason=_text(reason, "error"))


def _text(s, fallback):
    s = str(s or "").strip() or fallback
    return s.encode()[:2048].decode(errors="ignore")  # R3: at most 2048 bytes


def _post(token):
    """One POST /write; returns (result, HTTP status or None, body text)."""
    global _seq
    cfg = config()
    with _seq_lock:
        _seq += 1
        wid = "%s-%s-%d" % (cfg.node, _run, _seq)
    body = json.dumps({"node": cfg.node, "token": int(token), "write_id": wid}).encode()
    req = urllib.request.Request(cfg.resource_url + "/write", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    status, text, result = None, "", "unknown"
    call_t = time.monotonic_ns()
    try:
        with _http.open(req, timeout=cfg.http_timeout) as resp:
            status, text = resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode(errors="replace")
    except OSError as e:  # timeout, refused, reset: the write may or may not have landed
        text = str(e)
    if status == 200:
        result = "accepted"
    elif status is not None and 400 <= status < 500:
        result = "rejected"
    emit("write", token=int(token), write_id=wid, call_t=call_t, result=result)  # t = answer
    return result, status, text


def write(token):
    """POST {"node","token","write_id"} to RESOURCE_URL/write (docs/candidates.md section 3)
    with the contract's timeout, print the write event, and return "accepted", "rejected"
    (409 or another 4xx) or "unknown" (no answer in time, 5xx)."""
    return _post(token)[0]


def _leader_work():
    """SPLITBRAIN_LEADER_WORK in seconds; 0 when unset (the harness sets it only when a row
    or check asks for a work gap)."""
    text = os.environ.get("SPLITBRAIN_LEADER_WORK", "")
    return duration("SPLITBRAIN_LEADER_WORK", text) if text else 0.0


def lead(token, still_leader, stop=stop):
    """Write every write interval while still_leader() is True and stop is not set.

    still_leader() is the adapter's view of what the library has told it; it returns True
    to go on, or anything else to end the tenure (a non-empty string is taken as the
    reason). Returns why the tenure ended: "sigterm", "fenced: ..." (a 409, the contract's
    step-down), still_leader's string, or None when still_leader returned a non-string
    (then the caller names the reason). Prints nothing but writes: the caller prints
    stepped-down with the reason, then resigns."""
    cfg = config()
    while True:
        if stop.is_set():
            return "sigterm"
        ok = still_leader()
        if ok is not True:
            return ok if isinstance(ok, str) and ok else None
        work = _leader_work()
        if work > 0:
            # The work gap, as the Go runtime opens it: the adapter has checked what its
            # library tells it and works on before sending; a fault on=step:leader-work lands
            # here (the zombie window). Observation only: nothing is checked again.
            emit("step", name="leader-work")
            if stop.wait(work):
                return "sigterm"
        result, status, text = _post(token)
        if status == 409:
            return "fenced: resource answered 409 %s" % text.strip()[:200]
        if stop.wait(cfg.interval):
            return "sigterm"
