// A splitbrain candidate on Apache Curator (Debian's 5.4.0): one source file, compiled by the
// JRE's own javac and run as `java -cp <classes>:<Debian's jars> Candidate VARIANT` (the
// launcher `candidate`; `java -cp <jars> Candidate.java VARIANT` runs it as well).
//
// VARIANT picks the recipe:
//   leaderlatch            LeaderLatch + LeaderLatchListener as the Curator docs show
//                          (leader-latch.html, "General Usage"); writes while the latch says
//                          it leads, stops on notLeader().
//   leaderlatch-suspended  the same, plus the ConnectionStateListener the docs "highly
//                          recommend" (leader-latch.html, "Error Handling"), treating
//                          SUSPENDED and LOST as loss of leadership as the LeaderSelector docs
//                          prescribe (leader-election.html, "Error Handling"): the belief
//                          ends at SUSPENDED/LOST and comes back only with the latch's next
//                          isLeader() after RECONNECTED.
//   leaderselector         LeaderSelector + LeaderSelectorListenerAdapter + autoRequeue(), as
//                          curator-examples' leader/ExampleClient does; takeLeadership()
//                          writes until it is interrupted.
//
// The adapter adds no safety of its own: it learns of loss only from Curator's callbacks (and,
// as the contract says, from a 409 of the fenced resource). The contract helper (environment,
// event lines, resource writes, SIGTERM) is the nested class Contract.

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public class Candidate {

    /** The candidate contract (docs/candidates.md), written once for Java adapters. */
    static final class Contract {
        final String node, endpoints, resource, election;
        final long ttlMs, intervalMs;
        final int httpTimeoutMs;
        final String writer; // unique per process: write ids stay unique across restarts (R7)
        private long seq;
        private final OutputStream out = new FileOutputStream(FileDescriptor.out);
        private final Object outLock = new Object();
        volatile boolean stopping;

        Contract() {
            if (!"1".equals(env("SPLITBRAIN_CONTRACT", "1"))) {
                fail("SPLITBRAIN_CONTRACT=" + System.getenv("SPLITBRAIN_CONTRACT") + ": this adapter speaks contract version 1");
            }
            node = env("SPLITBRAIN_NODE_ID", null);
            if (!"zookeeper".equals(env("SPLITBRAIN_STORE", null))) {
                fail("SPLITBRAIN_STORE must be zookeeper for a Curator candidate");
            }
            endpoints = env("SPLITBRAIN_STORE_ENDPOINTS", null);
            resource = env("SPLITBRAIN_RESOURCE_URL", null).replaceAll("/+$", "") + "/write";
            election = env("SPLITBRAIN_ELECTION", "splitbrain");
            ttlMs = durationMs("SPLITBRAIN_LEASE_TTL", env("SPLITBRAIN_LEASE_TTL", "2s"));
            intervalMs = durationMs("SPLITBRAIN_WRITE_INTERVAL", env("SPLITBRAIN_WRITE_INTERVAL", "50ms"));
            // The library helpers' write timeout: 2 s, the top of the Go runtime's clamp (why:
            // docs/libraries.md, "How a library runs"). No fault cuts the harness's resource
            // off, so only a loaded host answers later; a write given up sooner could land
            // after the job had released the lock and a next tenure had written.
            httpTimeoutMs = 2000;
            // The host's CLOCK_MONOTONIC at start: every process of this node starts at another
            // reading. (SecureRandom takes seconds to seed under libfaketime.)
            writer = node + "-" + Long.toString(System.nanoTime(), 36);
        }

        static void fail(String why) {
            System.err.println("Candidate.java: " + why);
            System.exit(64);
        }

        static String env(String name, String def) {
            String v = System.getenv(name);
            if (v != null && !v.isEmpty()) return v;
            if (def == null) fail(name + " is not set");
            return def;
        }

        private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?)(ns|us|\\u00b5s|ms|s|m|h)");

        /** A Go duration (2s, 50ms, 1m30s) in milliseconds. */
        static long durationMs(String name, String text) {
            Matcher m = PART.matcher(text);
            double ms = 0;
            int end = 0;
            while (m.find()) {
                if (m.start() != end) break;
                end = m.end();
                double n = Double.parseDouble(m.group(1));
                switch (m.group(2)) {
                    case "ns": ms += n / 1e6; break;
                    case "us": case "\u00b5s": ms += n / 1e3; break;
                    case "ms": ms += n; break;
                    case "s": ms += n * 1e3; break;
                    case "m": ms += n * 60e3; break;
                    default: ms += n * 3600e3;
                }
            }
            if (end == 0 || end != text.length()) fail(name + "=" + text + " is not a Go duration such as 2s or 50ms");
            return Math.max(1, Math.round(ms));
        }

        /** Prints one event line; t is read inside the output lock, so print order is time order (R2). */
        void emit(String kind, Object... kv) {
            synchronized (outLock) {
                StringBuilder b = new StringBuilder(128);
                b.append("{\"t\":").append(System.nanoTime()).append(",\"kind\":\"").append(kind).append('"');
                for (int i = 0; i + 1 < kv.length; i += 2) {
                    b.append(",\"").append(kv[i]).append("\":");
                    Object v = kv[i + 1];
                    if (v instanceof Number) b.append(v);
                    else b.append(quote(String.valueOf(v)));
                }
                b.append("}\n");
                try {
                    out.write(b.toString().getBytes(StandardCharsets.UTF_8));
                    out.flush(); // R1: a pipe would hold the line otherwise
                } catch (IOException e) {
                    System.err.println("emit: " + e);
                }
            }
        }

        static String quote(String s) {
            StringBuilder b = new StringBuilder(s.length() + 2).append('"');
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            if (b.length() > 2000) b.setLength(2000);
            return b.append('"').toString();
        }

        /** A fresh write id, unique in the run (R7). */
        synchronized String nextWriteId() {
            return writer + "-" + (++seq);
        }

        /** POSTs one write; returns accepted, rejected (4xx, 409 stale) or unknown. */
        String write(long token, String writeId) {
            String body = "{\"node\":" + quote(node) + ",\"token\":" + token + ",\"write_id\":" + quote(writeId) + "}";
            try {
                HttpURLConnection c = (HttpURLConnection) new URL(resource).openConnection();
                c.setConnectTimeout(httpTimeoutMs);
                c.setReadTimeout(httpTimeoutMs);
                c.setRequestMethod("POST");
                c.setDoOutput(true);
                c.setRequestProperty("Content-Type", "application/json");
                try (OutputStream o = c.getOutputStream()) {
                    o.write(body.getBytes(StandardCharsets.UTF_8));
                }
                int code = c.getResponseCode();
                try {
                    (code < 400 ? c.getInputStream() : c.getErrorStream()).readAllBytes();
                } catch (IOException | NullPointerException ignored) {
                }
                if (code == 200) return "accepted";
                if (code >= 400 && code < 500) return "rejected";
                return "unknown";
            } catch (IOException e) {
                return "unknown"; // no answer in time: the write may or may not have landed
            }
        }

        /** What SIGTERM runs; until the adapter is set up there is nothing to give back. */
        volatile Runnable onStop = () -> Runtime.getRuntime().halt(0);

        /**
         * SIGTERM and SIGINT set stopping and run onStop once. Installed first thing in main:
         * PID 1 ignores signals without a handler, and the JVM's own exits 143.
         */
        void installSignals() {
            sun.misc.SignalHandler h = sig -> {
                if (!stopping) {
                    stopping = true;
                    new Thread(onStop, "sigterm").start();
                }
            };
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), h);
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), h);
        }
    }

    // ---- the adapter ----

    final Contract k;
    final String variant;
    final CuratorFramework client;
    final String path;

    // The belief: token > 0 while this process believes it leads. Guarded by this object, and a
    // write's call_t is taken under it, so no write is sent after its stepped-down line (R6).
    private long token;
    private Object term; // the latch (or selector thread) the current tenure belongs to
    private LeaderLatch latch;
    private LeaderSelector selector;

    Candidate(Contract k, String variant) {
        this.k = k;
        this.variant = variant;
        this.path = "/splitbrain-curator/" + k.election;
        // As the docs show (getting-started.html; ExampleClient): a builder with the session
        // timeout = the TTL (the store enforces it), a connection timeout below it (R16), and
        // ExponentialBackoffRetry(1000, 3). The default error policy is kept:
        // StandardConnectionStateErrorPolicy, so the recipes treat SUSPENDED as an error.
        client = CuratorFrameworkFactory.builder()
                .connectString(k.endpoints)
                .sessionTimeoutMs((int) k.ttlMs)
                .connectionTimeoutMs((int) Math.max(k.ttlMs / 2, 500))
                .retryPolicy(new ExponentialBackoffRetry(1000, 3))
                // R12 only: the default EnsembleTracker replaces the connect string with the
                // servers' IP addresses from the ensemble config, and a restarted store node
                // comes back on another address. Liveness, not safety.
                .ensembleTracker(false)
                .build();
    }

    /**
     * The token of a latch node: its czxid (the zxid of its create, global and growing). Not
     * its sequence number: the latch's parent is a container node, which ZooKeeper removes
     * once it is empty, and the sequence starts again at 0 under the new parent (seen in a
     * handoff run where every candidate restarted at once: token 1 after token 10).
     * One exists() of the node the latch has just found lowest. When that node is gone, the
     * latch still says this process leads (after RECONNECTED it re-checks the node it had; a
     * session restored by restarted servers can expire in between, on a starved JVM seconds
     * after the reconnect), and a user's isLeader() leads whatever the node's fate: the belief
     * is reported with the czxid that node had when last read. Hiding it would be safety the
     * library does not give (it hid CURATOR-696 once at load 60, 2026-11-29). 0 only when the
     * node was never read or the read failed.
     */
    long czxidToken(String nodePath) {
        if (nodePath == null) return 0;
        try {
            Stat st = client.checkExists().forPath(nodePath);
            if (st != null) {
                czxids.put(nodePath, st.getCzxid());
                return st.getCzxid();
            }
            Long known = czxids.get(nodePath);
            if (known != null) {
                System.err.println("latch node " + nodePath + " is gone, and the latch says this process leads: its token was " + known);
                return known;
            }
            k.emit("error", "reason", "latch node " + nodePath + " is gone and was never read: no token to write with");
            return 0;
        } catch (Exception e) {
            k.emit("error", "reason", "token read of " + nodePath + ": " + e);
            return 0;
        }
    }

    /** The czxid of each latch node this process has read, by path. */
    private final Map<String, Long> czxids = new ConcurrentHashMap<>();

    synchronized void elected(Object owner, long tok) {
        if (k.stopping || tok <= 0) {
            return; // R10: never announce a term won after SIGTERM
        }
        if (token > 0) return;
        term = owner;
        token = tok;
        k.emit("elected", "token", tok);
    }

    /** Ends the belief if owner's tenure is the current one; returns whether it did. */
    synchronized boolean steppedDown(Object owner, String reason, boolean campaignAgain) {
        if (token == 0 || (owner != null && owner != term)) return false;
        token = 0;
        term = null;
        k.emit("stepped-down", "reason", reason);
        if (campaignAgain && !k.stopping) k.emit("campaigning");
        return true;
    }

    /** One write while believing; returns the result, or null when not leading. */
    String writeOnce(Object owner) {
        long tok;
        long callT;
        String id;
        synchronized (this) {
            if (token == 0 || (owner != null && owner != term) || k.stopping) return null;
            tok = token;
            id = k.nextWriteId();
            callT = System.nanoTime();
        }
        String result = k.write(tok, id);
        k.emit("write", "token", tok, "write_id", id, "call_t", callT, "result", result);
        return result;
    }

    void startLatch() throws Exception {
        LeaderLatch l = new LeaderLatch(client, path, k.node);
        l.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                // getLastPathIsLeader() is set by the latch just before it calls isLeader().
                elected(l, czxidToken(l.getLastPathIsLeader()));
            }

            @Override
            public void notLeader() {
                steppedDown(l, "curator: LeaderLatchListener.notLeader()", true);
            }
        });
        synchronized (this) {
            latch = l;
        }
        l.start();
    }

    void runLatch() throws Exception {
        if (variant.equals("leaderlatch-suspended")) {
            // The recommended listener: SUSPENDED or LOST (the error states of the client's
            // policy, as LeaderSelectorListenerAdapter tests them) end the belief at once.
            client.getConnectionStateListenable().addListener((c, state) -> {
                if (c.getConnectionStateErrorPolicy().isErrorState(state)) {
                    steppedDown(null, "curator: connection " + state, true);
                }
            });
        }
        client.start();
        startLatch();
        while (!k.stopping) {
            String r = writeOnce(null);
            if ("rejected".equals(r)) {
                // The contract: a 409 means a newer token was accepted; step down and campaign
                // anew through the library (close the latch, start a new one).
                LeaderLatch old;
                synchronized (this) {
                    old = latch;
                }
                if (steppedDown(null, "fenced: the resource saw a newer token", true)) {
                    try {
                        old.close();
                    } catch (Exception e) {
                        k.emit("error", "reason", "latch close: " + e);
                    }
                    if (!k.stopping) startLatch();
                }
            }
            sleep(k.intervalMs);
        }
    }

    void runSelector() throws Exception {
        LeaderSelector[] self = new LeaderSelector[1];
        LeaderSelectorListenerAdapter listener = new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                Object owner = Thread.currentThread();
                elected(owner, selectorToken(c, self[0]));
                String reason = "curator: takeLeadership returned";
                try {
                    while (!Thread.currentThread().isInterrupted()) {
                        String r = writeOnce(owner);
                        if (r == null) break;
                        if ("rejected".equals(r)) {
                            reason = "fenced: the resource saw a newer token";
                            break;
                        }
                        Thread.sleep(k.intervalMs);
                    }
                } catch (InterruptedException e) {
                    reason = "curator: takeLeadership interrupted";
                } finally {
                    steppedDown(owner, k.stopping ? "sigterm" : reason, true);
                }
            }

        };
        LeaderSelector s = new LeaderSelector(client, path, listener);
        self[0] = s;
        s.setId(k.node);
        s.autoRequeue();
        synchronized (this) {
            selector = s;
        }
        client.start();
        s.start();
        while (!k.stopping) sleep(100);
    }

    /**
     * LeaderSelector hides its lock node, so its token is the czxid of the lock node under the
     * selector's path whose data is this node's id (setId): the lowest when the lock works.
     * takeLeadership() is the library saying this process leads, so that belief is reported
     * even when the node is not the lowest or is gone (then with the czxid last read, as
     * czxidToken does): refusing it would be safety the library does not give. 0 only when no
     * node of ours was ever read.
     */
    long selectorToken(CuratorFramework c, LeaderSelector s) {
        try {
            List<String> kids = new ArrayList<>(c.getChildren().forPath(path));
            kids.removeIf(n -> !n.contains("lock-"));
            Collections.sort(kids, (a, b) -> a.substring(a.length() - 10).compareTo(b.substring(b.length() - 10)));
            for (String kid : kids) {
                Stat st = new Stat();
                byte[] id;
                try {
                    id = c.getData().storingStatIn(st).forPath(path + "/" + kid);
                } catch (org.apache.zookeeper.KeeperException.NoNodeException gone) {
                    continue; // released meanwhile: not ours, or ours no longer
                }
                if (!k.node.equals(new String(id, StandardCharsets.UTF_8))) continue;
                if (!kid.equals(kids.get(0))) {
                    System.err.println("takeLeadership() with lock node " + kid + " not the lowest (" + kids.get(0) + ")");
                }
                lastSelectorToken = st.getCzxid();
                return st.getCzxid();
            }
        } catch (Exception e) {
            k.emit("error", "reason", "token read: " + e);
        }
        if (lastSelectorToken > 0) {
            System.err.println("takeLeadership() with no lock node of ours: its token stays " + lastSelectorToken);
            return lastSelectorToken;
        }
        k.emit("error", "reason", "takeLeadership() with no lock node of ours ever read: no token to write with");
        return 0;
    }

    /** The czxid of the selector's lock node of ours last read. */
    private volatile long lastSelectorToken;

    /** SIGTERM: stop writing, say so, give the leadership back through the library, exit 0 (R11). */
    void shutdown() {
        steppedDown(null, "sigterm", false);
        try {
            LeaderLatch l;
            LeaderSelector s;
            synchronized (this) {
                l = latch;
                s = selector;
            }
            if (l != null) l.close();
            if (s != null) s.close();
        } catch (Exception e) {
            System.err.println("close: " + e);
        }
        try {
            client.close();
        } catch (Exception e) {
            System.err.println("client close: " + e);
        }
        System.exit(0);
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static void main(String[] args) throws Exception {
        String variant = args.length > 0 ? args[0].toLowerCase(Locale.ROOT) : "leaderlatch";
        if (!List.of("leaderlatch", "leaderlatch-suspended", "leaderselector").contains(variant)) {
            Contract.fail("unknown variant " + variant + " (leaderlatch, leaderlatch-suspended, leaderselector)");
        }
        Contract k = new Contract();
        k.installSignals();
        Candidate c = new Candidate(k, variant);
        // A watchdog: exit 0 within 5 s of SIGTERM even if a close hangs on a dead store (R11).
        k.onStop = () -> {
            Thread w = new Thread(() -> {
                sleep(3000); // R11 leaves 5 s; a starved JVM handles the signal late
                Runtime.getRuntime().halt(0);
            }, "sigterm-watchdog");
            w.setDaemon(true);
            w.start();
            c.shutdown();
        };
        if (k.stopping) c.shutdown(); // SIGTERM came during the setup
        k.emit("campaigning");
        if (variant.equals("leaderselector")) c.runSelector();
        else c.runLatch();
        Thread.currentThread().join(); // shutdown() exits
    }
}
