// Package candidate is the store-independent half of the example candidates in
// examples/stores and examples/bugs: the environment (docs/candidates.md section 1), the event lines
// (section 2), the resource's write API (section 3) and the signals (section 4), written
// from the docs like examples/go, with no package of splitbrain. Each example's main.go is
// the store half, written from section 8, "Connecting, store by store".
package candidate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Env is what the harness told this candidate.
type Env struct {
	Node          string
	Store         string
	Endpoints     []string // not set with store none
	Peers         []string // host:port of every candidate, this one included
	ListenPort    int
	ResourceURL   string
	TTL           time.Duration
	WriteInterval time.Duration
	Renew         time.Duration // SPLITBRAIN_RENEW_INTERVAL, else TTL/3
	Retry         time.Duration // SPLITBRAIN_RETRY_INTERVAL, else 50ms
	Election      string
	Kubeconfig    string
	PodName       string
}

// Load reads the environment for store, the one store the example runs on. Every missing
// or malformed variable is reported at once and the process exits 64 (R15). The required
// variables are the ones section 1 lists for that store: with store none there are no
// endpoints, the peers take their place.
func Load(store string) Env {
	var errs []string
	get := func(name string) string { return strings.TrimSpace(os.Getenv(name)) }
	required := func(name string) string {
		v := get(name)
		if v == "" {
			errs = append(errs, name+" is not set")
		}
		return v
	}
	duration := func(name string, def time.Duration) time.Duration {
		v := get(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%q is not a positive Go duration", name, v))
			return def
		}
		return d
	}
	e := Env{Node: required("SPLITBRAIN_NODE_ID"), Store: required("SPLITBRAIN_STORE")}
	if e.Store != "" && e.Store != store {
		errs = append(errs, fmt.Sprintf("SPLITBRAIN_STORE=%s: this candidate runs on store %s only", e.Store, store))
	}
	if c := get("SPLITBRAIN_CONTRACT"); c != "" && c != "1" {
		errs = append(errs, "SPLITBRAIN_CONTRACT="+c+": this candidate implements contract 1")
	}
	if store == "none" {
		e.Peers = strings.Split(required("SPLITBRAIN_PEERS"), ",")
		port := get("SPLITBRAIN_LISTEN_PORT")
		if port == "" {
			port = "7000"
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			errs = append(errs, "SPLITBRAIN_LISTEN_PORT="+port+" is not a TCP port")
		}
		e.ListenPort = p
	} else {
		e.Endpoints = strings.Split(required("SPLITBRAIN_STORE_ENDPOINTS"), ",")
	}
	if store == "kubernetes" {
		e.Kubeconfig = required("SPLITBRAIN_STORE_KUBECONFIG")
		e.PodName = get("SPLITBRAIN_POD_NAME")
	}
	e.ResourceURL = strings.TrimRight(required("SPLITBRAIN_RESOURCE_URL"), "/")
	e.TTL = duration("SPLITBRAIN_LEASE_TTL", 2*time.Second)
	e.WriteInterval = duration("SPLITBRAIN_WRITE_INTERVAL", 50*time.Millisecond)
	e.Renew = duration("SPLITBRAIN_RENEW_INTERVAL", e.TTL/3)
	e.Retry = duration("SPLITBRAIN_RETRY_INTERVAL", 50*time.Millisecond)
	e.Election = get("SPLITBRAIN_ELECTION")
	if e.Election == "" {
		e.Election = "splitbrain"
	}
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "%s candidate: bad environment:\n  %s\n", store, strings.Join(errs, "\n  "))
		os.Exit(64)
	}
	return e
}

// Monotonic is CLOCK_MONOTONIC in ns, the contract's timestamp (R5).
func Monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

var outMu sync.Mutex

// emit prints one event line. t is read inside the lock, so print order is time order (R2).
func emit(fields map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	fields["t"] = Monotonic()
	b, _ := json.Marshal(fields)
	os.Stdout.Write(append(b, '\n')) // unbuffered: one write per line (R1)
}

// Campaigning starts a campaign (R9).
func Campaigning() { emit(map[string]any{"kind": "campaigning"}) }

// Elected announces a term; callT is when the winning acquire was sent.
func Elected(token, callT int64) {
	emit(map[string]any{"kind": "elected", "token": token, "call_t": callT})
}

// SteppedDown ends the belief, before the lock is given back (R9).
func SteppedDown(reason string) { emit(map[string]any{"kind": "stepped-down", "reason": reason}) }

// Error records a store error in the history.
func Error(reason string) {
	if reason != "" {
		emit(map[string]any{"kind": "error", "reason": truncate(reason, 2000)})
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Signals is cancelled by SIGTERM or SIGINT (R11; the candidate is PID 1 of its container).
func Signals() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
}

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Unique is a random id part: write ids and identities must be unique across restarts (R7).
func Unique() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Writer sends the leader's writes to the resource.
type Writer struct {
	env  Env
	http *http.Client
	run  string
	seq  int
}

// NewWriter bounds each write as the Go runtime does: clamp(4 × write interval, 200ms, 2s).
func NewWriter(env Env) *Writer {
	return &Writer{env: env, run: env.Node + "-" + Unique(),
		http: &http.Client{Timeout: min(max(4*env.WriteInterval, 200*time.Millisecond), 2*time.Second)}}
}

// Lead writes every write interval with token until ctx ends (SIGTERM), lost says why the
// term is over (checked before every write, R14), or the resource fences the write. It
// returns the reason for stepped-down.
func (w *Writer) Lead(ctx context.Context, token int64, lost func() string) string {
	tick := time.NewTicker(w.env.WriteInterval)
	defer tick.Stop()
	for {
		if ctx.Err() != nil {
			return "sigterm"
		}
		if why := lost(); why != "" {
			return why
		}
		w.seq++
		id := fmt.Sprintf("%s-%d", w.run, w.seq)
		body, _ := json.Marshal(map[string]any{"node": w.env.Node, "token": token, "write_id": id})
		callT := Monotonic()
		result := "unknown"
		if resp, err := w.http.Post(w.env.ResourceURL+"/write", "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				result = "accepted"
			case resp.StatusCode >= 400 && resp.StatusCode < 500:
				result = "rejected"
			}
		}
		emit(map[string]any{"kind": "write", "token": token, "write_id": id, "call_t": callT, "result": result})
		if result == "rejected" {
			return "fenced: the resource accepted a newer token"
		}
		select {
		case <-ctx.Done():
			return "sigterm"
		case <-tick.C:
		}
	}
}

// Deadline is a leader's local lease end on the monotonic clock (R14), set from the send
// time of the acquire or renewal that the store granted.
type Deadline struct {
	mu  sync.Mutex
	end time.Time
	why string
}

// Extend moves the end to sent + d when that is later.
func (d *Deadline) Extend(sent time.Time, length time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := sent.Add(length); e.After(d.end) {
		d.end = e
	}
}

// Lose ends the term now, for why (the store said the lease is gone).
func (d *Deadline) Lose(why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.why == "" {
		d.why = why
	}
}

// Lost is "" while the term lasts, else why it ended.
func (d *Deadline) Lost() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.why != "":
		return d.why
	case !time.Now().Before(d.end):
		return "lease deadline passed without a renewal"
	}
	return ""
}

// Every runs f every period until ctx ends; for a leader's renewals.
func Every(ctx context.Context, period time.Duration, f func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for Sleep(ctx, period) {
			f(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// Clock is the candidate's clock of docs/candidates.md section 5: real time plus the
// offsets of the clock file, re-read at most every 2 ms. A candidate that uses it says so
// with CampaigningOnClock, so that clock faults reach its lease decisions.
type Clock struct {
	mu       sync.Mutex
	path     string
	readAt   int64 // CLOCK_MONOTONIC of the last read
	offset   int64 // wall offset at since, ns
	mono     int64 // monotonic offset at since, ns
	rate     float64
	since    int64 // real Unix ns
	reported bool
}

// NewClock reads SPLITBRAIN_CLOCK_OFFSET_FILE (default /splitbrain-clock/offset).
func NewClock() *Clock {
	p := os.Getenv("SPLITBRAIN_CLOCK_OFFSET_FILE")
	if p == "" {
		p = "/splitbrain-clock/offset"
	}
	return &Clock{path: p, rate: 1}
}

// refresh re-reads the file; a missing or empty file is offset 0, a bad one keeps the last
// good setting (reported once).
func (c *Clock) refresh() {
	now := Monotonic()
	if c.readAt != 0 && now-c.readAt < int64(2*time.Millisecond) {
		return
	}
	c.readAt = now
	b, err := os.ReadFile(c.path)
	f := strings.Fields(string(b))
	if err != nil || len(f) == 0 {
		c.offset, c.mono, c.rate, c.since = 0, 0, 1, 0
		return
	}
	bad := func() {
		if !c.reported {
			c.reported = true
			Error(fmt.Sprintf("clock file %s: cannot parse %q: keeping the last setting", c.path, string(b)))
		}
	}
	ints := make([]int64, 0, 3)
	for i, s := range f {
		if i == 1 {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			bad()
			return
		}
		ints = append(ints, n)
	}
	switch len(f) {
	case 1:
		c.offset, c.mono, c.rate, c.since = ints[0], ints[0], 1, 0
	case 3, 4:
		r, err := strconv.ParseFloat(f[1], 64)
		if err != nil || r <= 0 {
			bad()
			return
		}
		c.offset, c.rate, c.since, c.mono = ints[0], r, ints[1], ints[0]
		if len(f) == 4 {
			c.mono = ints[2]
		}
	default:
		bad()
	}
}

// drift is (rate − 1) × (now − since) at real Unix time now.
func (c *Clock) drift(nowUnix int64) int64 {
	if c.rate == 1 {
		return 0
	}
	return int64((c.rate - 1) * float64(nowUnix-c.since))
}

// Wall is the wall line: for points in time written into the store or compared with one.
func (c *Clock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	now := time.Now().Round(0)
	return now.Add(time.Duration(c.offset + c.drift(now.UnixNano())))
}

// Mono is the monotonic line in ns: for intervals measured inside the process.
func (c *Clock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	return time.Duration(Monotonic() + c.mono + c.drift(time.Now().UnixNano()))
}

// CampaigningOnClock starts a campaign and declares that lease decisions use the clock file.
func CampaigningOnClock() { emit(map[string]any{"kind": "campaigning", "clock": "offset-file"}) }

// Step prints the optional step event: faults can be started on it (on=step:NAME).
func Step(name string) { emit(map[string]any{"kind": "step", "name": name}) }
