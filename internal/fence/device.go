// Package fence is the fence device a run gives its candidates (docs/candidates.md "The
// fence device"): an HTTP power switch for the run's candidates, whoever runs them (the
// harness's containers, a test's host processes), with the faults the nemesis puts on it.
package fence

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Mode is how a fence fault changes the device (docs/faults.md "Fence device faults").
type Mode string

const (
	// Unreachable: requests get no answer and nothing is done (a black-holed BMC).
	Unreachable Mode = "unreachable"
	// Slow: requests are carried out and answered a delay late.
	Slow Mode = "slow"
	// Lying: a power-off is answered "off" at once and carried out a delay later.
	Lying Mode = "lying"
)

// Power is what the device switches: the run's candidates and nothing else (the harness
// implements it on the run's containers, the recipe chaos test on host processes).
type Power interface {
	// Off kills the node's process and returns once it is confirmed dead. by and id name
	// the request, for the history.
	Off(ctx context.Context, node, by string, id int) error
	// On starts the node's process again (a no-op when it runs).
	On(ctx context.Context, node string) error
	// PoweredOn reports whether the node's process runs.
	PoweredOn(ctx context.Context, node string) (bool, error)
	// Requester names the candidate of the run that sends from addr ("", false: none).
	Requester(ctx context.Context, addr netip.Addr) (string, bool)
}

// Device is the run's fence device (docs/candidates.md "The fence device"): an HTTP
// power switch, like a BMC or a hypervisor's API, that powers a candidate off (SIGKILL,
// answered only once the process is confirmed dead), reports its power state and powers it
// on (the harness starts it again). It knows only the run's candidate ids: any other name
// is refused, so no other container or process can be reached through it, and it answers
// only sources on the run's network that are (or were) the run's candidates. Every request
// of a candidate and its outcome is recorded (fence-request, fence-reply); what other
// sources send is counted, not recorded (outsiders). Actions are serialised, one at a time,
// as on one power switch.
type Device struct {
	nodes  []string
	power  Power
	record func(history.Event) (history.Event, error)
	logf   func(format string, args ...any)

	act    sync.Mutex // one power action at a time
	nextID atomic.Int64

	faultMu sync.Mutex
	faults  map[int]*faultState
	changed chan struct{} // closed and replaced whenever faults change

	out    outsiders
	limits limits

	closeOnce sync.Once

	srv  *http.Server
	ln   net.Listener
	wg   sync.WaitGroup // late (lying) power-offs still to happen
	stop context.CancelFunc
	ctx  context.Context
}

// outsiders counts what the device turned away: connections and requests from sources that
// are not the run's candidates, and connections over the limits. Another run or a host
// could send without end, so none of it goes into the history (it would grow the run's
// history and results); Close logs it in one line.
type outsiders struct {
	mu              sync.Mutex
	conns, requests int64
	over            int64    // candidates' connections closed over the limits
	sources         []string // the first maxOutsiderSources outside addresses
}

const maxOutsiderSources = 5

func (o *outsiders) note(addr string) {
	if len(o.sources) < maxOutsiderSources && !slices.Contains(o.sources, addr) {
		o.sources = append(o.sources, addr)
	}
}

func (o *outsiders) add(addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	o.note(addr)
}

func (o *outsiders) addConn(addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.conns++
	o.note(addr)
}

func (o *outsiders) addOver() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.over++
}

// summary is the one log line, "" when nothing was turned away.
func (o *outsiders) summary(l limits) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	if o.conns+o.requests > 0 {
		parts = append(parts, fmt.Sprintf("closed %d connection(s) at accept and refused %d request(s) (403) from sources outside the run's candidates, not in the history; first sources: %s",
			o.conns, o.requests, strings.Join(o.sources, ", ")))
	}
	if o.over > 0 {
		parts = append(parts, fmt.Sprintf("closed %d connection(s) of the run's candidates over the limit (%d per source, %d in all)", o.over, l.perSource, l.conns))
	}
	if len(parts) == 0 {
		return ""
	}
	return "fence device: " + strings.Join(parts, "; ")
}

// faultState is one fence fault in effect.
// A fault's window ends at its last after-effect: requests it holds (slow) and power-offs
// it promised (lying) are owed, and its heal waits for them.
type faultState struct {
	mode  Mode
	delay time.Duration
	owed  sync.WaitGroup
	// drop ends when the heal cannot wait longer: what is still owed is dropped, so nothing
	// of the fault acts after its end.
	drop   context.Context
	cancel context.CancelFunc
}

// dropWithin bounds the wait for a power action under way when a fault's owed work is
// dropped (an action is not interrupted; the harness confirms a kill within 10 s).
const dropWithin = 15 * time.Second

// Reply is the JSON body of every answer.
type Reply struct {
	Node  string `json:"node,omitempty"`
	Power string `json:"power,omitempty"` // on | off
	Error string `json:"error,omitempty"`
	ID    int    `json:"fence_id"`
}

// New makes a device for nodes (the run's candidate ids); record stores its events.
func New(nodes []string, power Power, record func(history.Event) (history.Event, error), logf func(string, ...any)) *Device {
	ctx, cancel := context.WithCancel(context.Background())
	return &Device{nodes: slices.Clone(nodes), power: power, record: record, logf: logf,
		faults: map[int]*faultState{}, changed: make(chan struct{}), ctx: ctx, stop: cancel, limits: defaultLimits}
}

// Serve starts answering on ln until close. Connections pass a gate (gateListener): only
// the run's candidates, within the limits; then plain HTTP or TLS (tls.go). Held requests
// (fence faults) are not cut by the timeouts: the ReadTimeout ends once the request is read
// (net/http), and writeJSON sets the write deadline when the answer is ready.
func (d *Device) Serve(ln net.Listener) {
	gate := &gateListener{Listener: ln, d: d, bySrc: map[netip.Addr]int{}}
	var cfg *tls.Config
	if cert, err := selfSigned(); err == nil {
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else {
		d.logf("fence device: no TLS (fence_docker needs it): %v", err)
	}
	d.ln = newSniffListener(gate, cfg, d.limits.readHeader)
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: d.limits.readHeader, ReadTimeout: d.limits.read,
		WriteTimeout: d.limits.write, IdleTimeout: d.limits.idle}
	go func() { _ = d.srv.Serve(d.ln) }()
}

// Close stops the device: no new requests, requests held by faults are dropped (recorded,
// not carried out), late power-offs still pending are cancelled (the run is ending). It may
// be called more than once, concurrently (an interrupt and the teardown).
func (d *Device) Close() { d.closeOnce.Do(d.close) }

func (d *Device) close() {
	d.stop()
	if d.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = d.srv.Shutdown(ctx)
		cancel()
		_ = d.srv.Close()
	}
	d.wg.Wait()
	if s := d.out.summary(d.limits); s != "" {
		d.logf("%s", s)
	}
}

// SetFault puts a fault on the device (the nemesis's fence kinds). The returned heal takes
// it off and returns once what it still owes is done (held requests answered, promised
// power-offs carried out), so its fault-end follows its last after-effect; when ctx ends
// first, what is still owed is dropped instead.
func (d *Device) SetFault(id int, mode Mode, delay time.Duration) (func(ctx context.Context) error, error) {
	switch mode {
	case Unreachable, Slow, Lying:
	default:
		return nil, fmt.Errorf("unknown fence fault mode %q", mode)
	}
	f := &faultState{mode: mode, delay: delay}
	f.drop, f.cancel = context.WithCancel(context.Background())
	d.faultMu.Lock()
	d.faults[id] = f
	close(d.changed)
	d.changed = make(chan struct{})
	d.faultMu.Unlock()
	return func(ctx context.Context) error { return d.heal(ctx, id, f) }, nil
}

func (d *Device) heal(ctx context.Context, id int, f *faultState) error {
	d.faultMu.Lock()
	if d.faults[id] == f {
		delete(d.faults, id)
		close(d.changed)
		d.changed = make(chan struct{})
	}
	d.faultMu.Unlock()
	// No request registers with f from here on (inEffect no longer sees it).
	done := make(chan struct{})
	go func() { f.owed.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	case <-d.ctx.Done():
	}
	f.cancel()
	select {
	case <-done:
		return nil
	case <-time.After(dropWithin):
		return fmt.Errorf("fence fault %d: a power action it held was still under way %s after its heal", id, dropWithin)
	}
}

// effect is what the faults in effect do to one request. slow and lying, when set, owe it
// (registered in inEffect); the caller settles that with owed.Done.
type effect struct {
	unreachable     int // the fault id that makes the device unreachable, 0: none
	slow, lying     *faultState
	slowID, lyingID int
	changed         <-chan struct{}
}

// inEffect sums up the faults now for a request of action: the unreachable fault with the
// lowest id, the slow one with the longest delay, and (for a power-off) the lying one with
// the longest lag. A request that gets an answer is owed by the slow and lying faults.
func (d *Device) inEffect(action string) effect {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	e := effect{changed: d.changed}
	for id, f := range d.faults {
		switch f.mode {
		case Unreachable:
			if e.unreachable == 0 || id < e.unreachable {
				e.unreachable = id
			}
		case Slow:
			if e.slow == nil || f.delay > e.slow.delay {
				e.slow, e.slowID = f, id
			}
		case Lying:
			if action == history.FenceOff && (e.lying == nil || f.delay > e.lying.delay) {
				e.lying, e.lyingID = f, id
			}
		}
	}
	if e.unreachable != 0 {
		e.slow, e.lying, e.slowID, e.lyingID = nil, nil, 0, 0
	}
	for _, f := range []*faultState{e.slow, e.lying} {
		if f != nil {
			f.owed.Add(1)
		}
	}
	return e
}

// maxTarget bounds the target name copied into the history; maxBody the body read and
// thrown away (a request needs none).
const (
	maxTarget = 64
	maxBody   = 64 << 10
)

// ServeHTTP handles POST /off/NODE, POST /on/NODE and GET /status/NODE, and the same
// actions through the Docker Engine API's few container calls fence_docker makes (docker.go).
func (d *Device) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	requester, known := "", false
	ap, err := netip.ParseAddrPort(req.RemoteAddr)
	if err == nil {
		requester, known = d.power.Requester(req.Context(), ap.Addr().Unmap())
	}
	if !known {
		src := req.RemoteAddr
		if err == nil {
			src = ap.Addr().Unmap().String()
		}
		d.out.add(src)
		d.writeJSON(w, http.StatusForbidden, Reply{Error: fmt.Sprintf("request from %s: only the run's candidates may use its fence device", req.RemoteAddr)})
		return
	}
	// A request needs no body; one is read (bounded, within the ReadTimeout) so that
	// net/http watches the connection from then on (without a deadline) and a held
	// request ends when its caller gives up.
	_, bodyErr := io.Copy(io.Discard, http.MaxBytesReader(w, req.Body, maxBody))
	id := int(d.nextID.Add(1))
	q := parseCall(req)
	action, target := q.action, q.target
	d.rec(history.Event{Kind: history.KindFenceRequest, Node: requester, FenceID: id, Action: action, Target: target})
	refuse := func(code int, why string) {
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceRefused, Reason: why})
		d.answer(w, q, code, Reply{Node: target, Error: why, ID: id})
	}
	switch {
	case bodyErr != nil:
		w.Header().Set("Connection", "close")
		refuse(http.StatusBadRequest, fmt.Sprintf("reading the request: %v (a fence request needs no body)", bodyErr))
		return
	case action == "invalid":
		refuse(http.StatusNotFound, q.invalid)
		return
	case !q.list() && !slices.Contains(d.nodes, target):
		refuse(http.StatusNotFound, fmt.Sprintf("no node %q in this run: the device powers only the run's candidates (%s)", target, strings.Join(d.nodes, ", ")))
		return
	case req.Method != q.method:
		w.Header().Set("Allow", q.method)
		refuse(http.StatusMethodNotAllowed, fmt.Sprintf("%s %s needs method %s", req.Method, q.what(), q.method))
		return
	}

	e := d.inEffect(action)
	if e.unreachable != 0 {
		// The request never gets an answer: held until the caller gives up, the fault heals
		// or the run ends, then the connection is cut, as a black-holed BMC looks to its caller.
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceDropped, Reason: fmt.Sprintf("fence-unreachable (fault %d): no answer, nothing done", e.unreachable)})
		select {
		case <-req.Context().Done():
		case <-e.changed:
		case <-d.ctx.Done():
		}
		panic(http.ErrAbortHandler)
	}
	lyingOwed := e.lying != nil // handed to the late power-off below, else settled here
	defer func() {
		if lyingOwed {
			e.lying.owed.Done()
		}
	}()
	// dropSlow ends a held request without acting: the run ended (teardown must not power
	// a node off) or the fault's heal could not wait longer (nothing acts after its end).
	dropSlow := func() {
		why := "its heal could not wait longer"
		if d.ctx.Err() != nil {
			why = "the run ended"
		}
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceDropped, Reason: fmt.Sprintf("fence-slow (fault %d): %s while the request was held; nothing done", e.slowID, why)})
		panic(http.ErrAbortHandler)
	}
	note := ""
	if e.slow != nil {
		defer e.slow.owed.Done()
		// A slow device still does what it was asked, also when the caller gave up meanwhile.
		select {
		case <-time.After(e.slow.delay):
		case <-d.ctx.Done():
			dropSlow()
		case <-e.slow.drop.Done():
			dropSlow()
		}
		note = fmt.Sprintf("fence-slow (fault %d): answered %s late", e.slowID, e.slow.delay)
	}
	ctx := context.WithoutCancel(req.Context())
	if e.lying != nil {
		if e.slow != nil && (d.ctx.Err() != nil || e.slow.drop.Err() != nil) {
			dropSlow()
		}
		lag, lying, lyingID := e.lying.delay, e.lying, e.lyingID
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceAcknowledged, Power: "off",
			Reason: joinNote(fmt.Sprintf("fence-lying (fault %d): answered off, the power-off follows %s later", lyingID, lag), note)})
		d.answer(w, q, http.StatusOK, Reply{Node: target, Power: "off", ID: id})
		lyingOwed = false
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer lying.owed.Done()
			dropped := func() bool {
				switch {
				case d.ctx.Err() != nil:
					d.logf("fence %d: the late power-off of %s (fence-lying, fault %d) dropped: the run ended", id, target, lyingID)
				case lying.drop.Err() != nil:
					d.logf("fence %d: the late power-off of %s (fence-lying, fault %d) dropped: the fault's heal could not wait longer", id, target, lyingID)
				default:
					return false
				}
				return true
			}
			select {
			case <-time.After(lag):
			case <-d.ctx.Done():
			case <-lying.drop.Done():
			}
			d.act.Lock()
			defer d.act.Unlock()
			if dropped() {
				return
			}
			if err := d.power.Off(ctx, target, requester, id); err != nil {
				d.logf("fence %d: late power-off of %s failed: %v", id, target, err)
			}
		}()
		return
	}
	d.act.Lock()
	if e.slow != nil && (d.ctx.Err() != nil || e.slow.drop.Err() != nil) {
		d.act.Unlock()
		dropSlow()
	}
	var power string
	var list []nodePower
	if q.list() {
		list, err = d.powerList(ctx)
		note = joinNote(listNote(list), note)
	} else {
		power, err = d.do(ctx, action, target, requester, id)
	}
	d.act.Unlock()
	if err != nil {
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceFailed, Reason: joinNote(err.Error(), note)})
		d.answer(w, q, http.StatusInternalServerError, Reply{Node: target, Error: err.Error(), ID: id})
		return
	}
	d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
		Result: history.FenceDone, Power: power, Reason: note})
	q.nodes = list
	d.answer(w, q, http.StatusOK, Reply{Node: target, Power: power, ID: id})
}

// do performs one action and returns the power state it leaves.
func (d *Device) do(ctx context.Context, action, target, by string, id int) (string, error) {
	switch action {
	case history.FenceOff:
		return "off", d.power.Off(ctx, target, by, id)
	case history.FenceOn:
		return "on", d.power.On(ctx, target)
	default:
		on, err := d.power.PoweredOn(ctx, target)
		if on {
			return "on", err
		}
		return "off", err
	}
}

func joinNote(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// rec records a fence event; the device keeps working when the history refuses it.
func (d *Device) rec(e history.Event) {
	e.Source = history.SourceHarness
	if _, err := d.record(e); err != nil {
		d.logf("fence %d: history: %v", e.FenceID, err)
	}
}

// writeJSON answers; the write deadline counts from now, since a fault may have held the
// request far longer than the server's WriteTimeout.
func (d *Device) writeJSON(w http.ResponseWriter, code int, body Reply) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d.limits.write))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// ErrNoNode is returned for a node the run has no process or container for (yet).
var ErrNoNode = errors.New("the node has no container")
