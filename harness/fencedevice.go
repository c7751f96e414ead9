package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// fencePower is what the fence device switches: the run's candidates and nothing else
// (fence.go implements it on the run's containers; the unit tests on a fake).
type fencePower interface {
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

// fenceDevice is the run's fence device (docs/candidates.md "The fence device"): an HTTP
// power switch, like a BMC or a hypervisor's API, that powers a candidate off (SIGKILL,
// answered only once the process is confirmed dead), reports its power state and powers it
// on (the harness starts it again). It knows only the run's candidate ids: any other name
// is refused, so no other container or process can be reached through it, and it answers
// only sources on the run's network that are (or were) the run's candidates. Every request
// and its outcome is recorded (fence-request, fence-reply). Actions are serialised, one at
// a time, as on one power switch.
type fenceDevice struct {
	nodes  []string
	power  fencePower
	record func(history.Event) (history.Event, error)
	logf   func(format string, args ...any)

	act    sync.Mutex // one power action at a time
	nextID atomic.Int64

	faultMu sync.Mutex
	faults  map[int]fenceFaultState
	changed chan struct{} // closed and replaced whenever faults change

	srv  *http.Server
	ln   net.Listener
	wg   sync.WaitGroup // late (lying) power-offs still to happen
	stop context.CancelFunc
	ctx  context.Context
}

// fenceFaultState is one fence fault in effect.
type fenceFaultState struct {
	mode  nemesis.FenceMode
	delay time.Duration
}

// fenceReply is the JSON body of every answer.
type fenceReply struct {
	Node  string `json:"node,omitempty"`
	Power string `json:"power,omitempty"` // on | off
	Error string `json:"error,omitempty"`
	ID    int    `json:"fence_id"`
}

func newFenceDevice(nodes []string, power fencePower, record func(history.Event) (history.Event, error), logf func(string, ...any)) *fenceDevice {
	ctx, cancel := context.WithCancel(context.Background())
	return &fenceDevice{nodes: slices.Clone(nodes), power: power, record: record, logf: logf,
		faults: map[int]fenceFaultState{}, changed: make(chan struct{}), ctx: ctx, stop: cancel}
}

// serve starts answering on ln until close.
func (d *fenceDevice) serve(ln net.Listener) {
	d.ln = ln
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
}

// close stops the device: no new requests, requests held by faults are dropped, late
// power-offs still pending are cancelled (the run is ending).
func (d *fenceDevice) close() {
	d.stop()
	if d.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = d.srv.Shutdown(ctx)
		cancel()
		_ = d.srv.Close()
	}
	d.wg.Wait()
}

// SetFault puts a fault on the device (nemesis.FenceDevice); the returned heal removes it.
func (d *fenceDevice) SetFault(id int, mode nemesis.FenceMode, delay time.Duration) (func() error, error) {
	switch mode {
	case nemesis.FenceUnreachable, nemesis.FenceSlow, nemesis.FenceLying:
	default:
		return nil, fmt.Errorf("unknown fence fault mode %q", mode)
	}
	d.faultMu.Lock()
	d.faults[id] = fenceFaultState{mode: mode, delay: delay}
	close(d.changed)
	d.changed = make(chan struct{})
	d.faultMu.Unlock()
	return func() error {
		d.faultMu.Lock()
		delete(d.faults, id)
		close(d.changed)
		d.changed = make(chan struct{})
		d.faultMu.Unlock()
		return nil
	}, nil
}

// inEffect sums up the faults now: the fault id that makes it unreachable (0: none), the
// longest slow delay and the longest lying lag, each with its fault id.
func (d *fenceDevice) inEffect() (unreachable int, slow time.Duration, slowID int, lag time.Duration, lyingID int, changed <-chan struct{}) {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	for id, f := range d.faults {
		switch f.mode {
		case nemesis.FenceUnreachable:
			if unreachable == 0 || id < unreachable {
				unreachable = id
			}
		case nemesis.FenceSlow:
			if f.delay > slow {
				slow, slowID = f.delay, id
			}
		case nemesis.FenceLying:
			if lyingID == 0 || f.delay > lag {
				lag, lyingID = f.delay, id
			}
		}
	}
	return unreachable, slow, slowID, lag, lyingID, d.changed
}

// maxFenceTarget bounds the target name copied into the history.
const maxFenceTarget = 64

// ServeHTTP handles POST /off/NODE, POST /on/NODE and GET /status/NODE.
func (d *fenceDevice) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id := int(d.nextID.Add(1))
	requester, known := "", false
	if ap, err := netip.ParseAddrPort(req.RemoteAddr); err == nil {
		requester, known = d.power.Requester(req.Context(), ap.Addr().Unmap())
	}
	action, target, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	if len(target) > maxFenceTarget {
		target = target[:maxFenceTarget]
	}
	if action != history.FenceOff && action != history.FenceOn && action != history.FenceStatus {
		action = "invalid"
	}
	d.rec(history.Event{Kind: history.KindFenceRequest, Node: requester, FenceID: id, Action: action, Target: target})
	refuse := func(code int, why string) {
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceRefused, Reason: why})
		writeFenceJSON(w, code, fenceReply{Node: target, Error: why, ID: id})
	}
	switch {
	case !known:
		refuse(http.StatusForbidden, fmt.Sprintf("request from %s: only the run's candidates may use its fence device", req.RemoteAddr))
		return
	case action == "invalid":
		refuse(http.StatusNotFound, fmt.Sprintf("unknown path %q: use POST /off/NODE, POST /on/NODE or GET /status/NODE", req.URL.Path))
		return
	case !slices.Contains(d.nodes, target):
		refuse(http.StatusNotFound, fmt.Sprintf("no node %q in this run: the device powers only the run's candidates (%s)", target, strings.Join(d.nodes, ", ")))
		return
	case action == history.FenceStatus && req.Method != http.MethodGet,
		action != history.FenceStatus && req.Method != http.MethodPost:
		want := http.MethodPost
		if action == history.FenceStatus {
			want = http.MethodGet
		}
		w.Header().Set("Allow", want)
		refuse(http.StatusMethodNotAllowed, fmt.Sprintf("%s /%s needs method %s", req.Method, action, want))
		return
	}

	unreachable, slow, slowID, lag, lyingID, changed := d.inEffect()
	if unreachable != 0 {
		// The request never gets an answer: held until the caller gives up, the fault heals
		// or the run ends, then the connection is cut, as a black-holed BMC looks to its caller.
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceDropped, Reason: fmt.Sprintf("fence-unreachable (fault %d): no answer, nothing done", unreachable)})
		select {
		case <-req.Context().Done():
		case <-changed:
		case <-d.ctx.Done():
		}
		panic(http.ErrAbortHandler)
	}
	if slow > 0 {
		// A slow device still does what it was asked, also when the caller gave up meanwhile.
		select {
		case <-time.After(slow):
		case <-d.ctx.Done():
		}
	}
	ctx := context.WithoutCancel(req.Context())
	if action == history.FenceOff && lyingID != 0 {
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceAcknowledged, Power: "off",
			Reason: fmt.Sprintf("fence-lying (fault %d): answered off, the power-off follows %s later", lyingID, lag)})
		writeFenceJSON(w, http.StatusOK, fenceReply{Node: target, Power: "off", ID: id})
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			select {
			case <-time.After(lag):
			case <-d.ctx.Done():
				return
			}
			d.act.Lock()
			defer d.act.Unlock()
			if err := d.power.Off(ctx, target, requester, id); err != nil {
				d.logf("fence %d: late power-off of %s failed: %v", id, target, err)
			}
		}()
		return
	}
	note := ""
	if slowID != 0 {
		note = fmt.Sprintf("fence-slow (fault %d): answered %s late", slowID, slow)
	}
	d.act.Lock()
	power, err := d.do(ctx, action, target, requester, id)
	d.act.Unlock()
	if err != nil {
		d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
			Result: history.FenceFailed, Reason: joinNote(err.Error(), note)})
		writeFenceJSON(w, http.StatusInternalServerError, fenceReply{Node: target, Error: err.Error(), ID: id})
		return
	}
	d.rec(history.Event{Kind: history.KindFenceReply, Node: requester, FenceID: id, Action: action, Target: target,
		Result: history.FenceDone, Power: power, Reason: note})
	writeFenceJSON(w, http.StatusOK, fenceReply{Node: target, Power: power, ID: id})
}

// do performs one action and returns the power state it leaves.
func (d *fenceDevice) do(ctx context.Context, action, target, by string, id int) (string, error) {
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
func (d *fenceDevice) rec(e history.Event) {
	e.Source = history.SourceHarness
	if _, err := d.record(e); err != nil {
		d.logf("fence %d: history: %v", e.FenceID, err)
	}
}

func writeFenceJSON(w http.ResponseWriter, code int, body fenceReply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// errFenceNoNode is returned for a node the run does not have a container for (yet).
var errFenceNoNode = errors.New("the node has no container")
