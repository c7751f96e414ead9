package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// fakePower records what the device asked of it.
type fakePower struct {
	mu        sync.Mutex
	on        map[string]bool
	calls     []string
	requester map[netip.Addr]string
	offDone   chan string
}

func (f *fakePower) Off(_ context.Context, node, by string, id int) error {
	f.mu.Lock()
	f.on[node] = false
	f.calls = append(f.calls, "off "+node+" by "+by)
	f.mu.Unlock()
	if f.offDone != nil {
		f.offDone <- node
	}
	return nil
}

func (f *fakePower) On(_ context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on[node] = true
	f.calls = append(f.calls, "on "+node)
	return nil
}

func (f *fakePower) PoweredOn(_ context.Context, node string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on[node], nil
}

func (f *fakePower) Requester(_ context.Context, a netip.Addr) (string, bool) {
	n, ok := f.requester[a]
	return n, ok
}

func (f *fakePower) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type recorded struct {
	mu  sync.Mutex
	evs []history.Event
}

func (r *recorded) record(e history.Event) (history.Event, error) {
	e.V, e.T = history.Version, history.Now()
	if err := e.Validate(); err != nil {
		return e, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	return e, nil
}

func (r *recorded) list() []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Event(nil), r.evs...)
}

// startTestFence serves a device for c1..c3 on loopback; requests from loopback count as
// candidate asker unless asker is "" (then no source is a candidate of the run).
func startTestFence(t *testing.T, asker string) (*Device, *fakePower, *recorded, string) {
	t.Helper()
	fp := &fakePower{on: map[string]bool{"c1": true, "c2": true, "c3": true}, requester: map[netip.Addr]string{}}
	if asker != "" {
		fp.requester[netip.MustParseAddr("127.0.0.1")] = asker
	}
	rec := &recorded{}
	d := New([]string{"c1", "c2", "c3"}, fp, rec.record, t.Logf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(ln)
	t.Cleanup(d.Close)
	return d, fp, rec, "http://" + ln.Addr().String()
}

func fenceCall(t *testing.T, method, url string, timeout time.Duration) (int, Reply, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: timeout}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, Reply{}, err
	}
	defer resp.Body.Close()
	var body Reply
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, url, err)
	}
	return resp.StatusCode, body, nil
}

// replyOf finds the fence-reply of request id.
func replyOf(t *testing.T, evs []history.Event, id int) history.Event {
	t.Helper()
	var req, rep *history.Event
	for i := range evs {
		if evs[i].FenceID != id {
			continue
		}
		switch evs[i].Kind {
		case history.KindFenceRequest:
			req = &evs[i]
		case history.KindFenceReply:
			rep = &evs[i]
		}
	}
	if req == nil || rep == nil {
		t.Fatalf("fence %d: want a fence-request and a fence-reply, have %+v", id, evs)
	}
	if req.Seq > rep.Seq || req.T > rep.T {
		t.Fatalf("fence %d: reply recorded before its request", id)
	}
	return *rep
}

func TestFenceDeviceRefusesNodesOutsideTheRun(t *testing.T) {
	_, fp, rec, url := startTestFence(t, "c1")
	for _, target := range []string{"c4", "etcd-1", "resource", "store-proxy", "C2", "c2x", "..", "%2e%2e%2fc2", "c2%2fx", ""} {
		code, body, err := fenceCall(t, http.MethodPost, url+"/off/"+target, 5*time.Second)
		if err != nil {
			t.Fatalf("off %q: %v", target, err)
		}
		if code != http.StatusNotFound || body.Error == "" || body.Power != "" {
			t.Errorf("off %q: answer %d %+v, want 404 with an error and no power state", target, code, body)
		}
		rep := replyOf(t, rec.list(), body.ID)
		if rep.Result != history.FenceRefused || rep.Node != "c1" || !strings.Contains(rep.Reason, "c1, c2, c3") {
			t.Errorf("off %q: recorded %+v, want refused, requester c1, a reason naming the run's nodes", target, rep)
		}
	}
	for _, path := range []string{"/reboot/c2", "/off", "/", "/status/c2/x"} {
		code, body, err := fenceCall(t, http.MethodPost, url+path, 5*time.Second)
		if err != nil || code != http.StatusNotFound {
			t.Errorf("POST %s: %d %v, want 404", path, code, err)
		}
		if rep := replyOf(t, rec.list(), body.ID); rep.Result != history.FenceRefused {
			t.Errorf("POST %s recorded %+v, want refused", path, rep)
		}
	}
	if code, _, _ := fenceCall(t, http.MethodGet, url+"/off/c2", 5*time.Second); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /off/c2: %d, want 405 (power actions are POST)", code)
	}
	if code, _, _ := fenceCall(t, http.MethodPost, url+"/status/c2", 5*time.Second); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /status/c2: %d, want 405", code)
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("refused requests reached the power switch: %v", calls)
	}
}

// logLines collects a device's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

// TestFenceDeviceRefusesSourcesOutsideTheRun: a source that is not a candidate of the run
// gets 403 and nothing done; its requests stay out of the history (another run's candidate
// put 19,976 request/reply pairs into one run's history) and are counted in one log line.
func TestFenceDeviceRefusesSourcesOutsideTheRun(t *testing.T) {
	fp := &fakePower{on: map[string]bool{"c1": true, "c2": true}, requester: map[netip.Addr]string{}}
	rec, logs := &recorded{}, &logLines{}
	d := New([]string{"c1", "c2"}, fp, rec.record, logs.logf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(ln)
	defer d.Close()
	url := "http://" + ln.Addr().String()
	for range 3 {
		code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second)
		if err != nil || code != http.StatusForbidden || body.Error == "" {
			t.Fatalf("off c2 from a non-candidate: %d %+v %v, want 403 with an error", code, body, err)
		}
	}
	if evs := rec.list(); len(evs) != 0 {
		t.Errorf("requests from outside the run were recorded: %+v", evs)
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("a request from outside the run reached the power switch: %v", calls)
	}
	d.Close()
	lines := logs.matching("outside the run's candidates")
	if len(lines) != 1 || !strings.Contains(lines[0], "3 request") || !strings.Contains(lines[0], "127.0.0.1") {
		t.Errorf("log lines about outsiders %q, want one counting 3 requests and naming 127.0.0.1", lines)
	}
}

func TestFenceDeviceOffStatusOnAreRecorded(t *testing.T) {
	_, fp, rec, url := startTestFence(t, "c1")
	code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" || body.Node != "c2" {
		t.Fatalf("off c2: %d %+v %v, want 200 power off", code, body, err)
	}
	rep := replyOf(t, rec.list(), body.ID)
	if rep.Result != history.FenceDone || rep.Power != "off" || rep.Node != "c1" || rep.Target != "c2" || rep.Action != history.FenceOff {
		t.Errorf("off recorded as %+v", rep)
	}
	if _, body, _ = fenceCall(t, http.MethodGet, url+"/status/c2", 5*time.Second); body.Power != "off" {
		t.Errorf("status after off: %+v, want off", body)
	}
	if _, body, _ = fenceCall(t, http.MethodPost, url+"/on/c2", 5*time.Second); body.Power != "on" {
		t.Errorf("on: %+v, want on", body)
	}
	if _, body, _ = fenceCall(t, http.MethodGet, url+"/status/c2", 5*time.Second); body.Power != "on" {
		t.Errorf("status after on: %+v, want on", body)
	}
	if got, want := strings.Join(fp.callList(), "; "), "off c2 by c1; on c2"; got != want {
		t.Errorf("power calls %q, want %q", got, want)
	}
	ids := map[int]bool{}
	for _, e := range rec.list() {
		ids[e.FenceID] = true
	}
	if len(ids) != 4 || len(rec.list()) != 8 {
		t.Errorf("want 4 requests with one reply each, have %d events over ids %v", len(rec.list()), ids)
	}
}

func TestFenceDeviceFaults(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")

	heal, err := d.SetFault(1, Unreachable, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fenceCall(t, http.MethodPost, url+"/off/c1", 200*time.Millisecond); err == nil {
		t.Fatal("off while the device is unreachable got an answer")
	}
	var dropped *history.Event
	for _, e := range rec.list() {
		if e.Kind == history.KindFenceReply && e.Result == history.FenceDropped {
			dropped = &e
		}
	}
	if dropped == nil || dropped.Target != "c1" || dropped.Node != "c3" || !strings.Contains(dropped.Reason, "fault 1") {
		t.Fatalf("an unreachable device's request must be recorded as dropped by fault 1: %+v", rec.list())
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Fatalf("an unreachable device powered something: %v", calls)
	}
	heal()

	// lying: "off" at once, the power-off after the lag.
	fp.offDone = make(chan string, 1)
	heal, _ = d.SetFault(2, Lying, time.Millisecond)
	code, body, err := fenceCall(t, http.MethodPost, url+"/off/c1", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off under a lying device: %d %+v %v, want 200 off", code, body, err)
	}
	if rep := replyOf(t, rec.list(), body.ID); rep.Result != history.FenceAcknowledged || !strings.Contains(rep.Reason, "fault 2") {
		t.Errorf("lying reply recorded as %+v, want acknowledged naming fault 2", rep)
	}
	if got := <-fp.offDone; got != "c1" {
		t.Errorf("the late power-off hit %s, want c1", got)
	}
	heal()

	// slow: carried out and answered, the reply says why it was late.
	heal, _ = d.SetFault(3, Slow, time.Millisecond)
	code, body, err = fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off under a slow device: %d %+v %v", code, body, err)
	}
	<-fp.offDone
	if rep := replyOf(t, rec.list(), body.ID); rep.Result != history.FenceDone || !strings.Contains(rep.Reason, "fault 3") {
		t.Errorf("slow reply recorded as %+v, want done naming fault 3", rep)
	}
	heal()
	if _, err := d.SetFault(4, "flaky", 0); err == nil {
		t.Error("an unknown fault mode was accepted")
	}
}

// TestFenceDeviceCarriesOutBothSidesOfARace: two candidates ask to power each other off
// at once. The device does one action at a time, but a request it received is carried out
// even when its sender has been powered off meanwhile, as a BMC would: both end up off.
func TestFenceDeviceCarriesOutBothSidesOfARace(t *testing.T) {
	fp := &fakePower{on: map[string]bool{"c1": true, "c2": true}, requester: map[netip.Addr]string{
		netip.MustParseAddr("127.0.0.1"): "c1", netip.MustParseAddr("127.0.0.2"): "c2"}}
	rec := &recorded{}
	d := New([]string{"c1", "c2"}, fp, rec.record, t.Logf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(ln)
	t.Cleanup(d.Close)
	url := "http://" + ln.Addr().String()
	// c2 sends from 127.0.0.2 (loopback's other addresses are local too).
	c2 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, cl := range []*http.Client{{Timeout: 5 * time.Second}, c2} {
		target := []string{"c2", "c1"}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cl.Post(url+"/off/"+target, "", nil)
			if err != nil {
				t.Errorf("off %s: %v", target, err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK {
		t.Fatalf("answers %v, want both 200", codes)
	}
	on1, _ := fp.PoweredOn(context.Background(), "c1")
	on2, _ := fp.PoweredOn(context.Background(), "c2")
	if on1 || on2 {
		t.Errorf("after both fenced each other: c1 on=%v c2 on=%v, want both off", on1, on2)
	}
	by := map[string]string{}
	for _, e := range rec.list() {
		if e.Kind == history.KindFenceReply && e.Result == history.FenceDone {
			by[e.Node] = e.Target
		}
	}
	if by["c1"] != "c2" || by["c2"] != "c1" {
		t.Errorf("recorded power-offs by requester %v, want c1->c2 and c2->c1", by)
	}
}

// waitFor polls until cond holds, for at most 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hasKind reports whether evs hold an event of kind for request id.
func hasKind(evs []history.Event, kind history.Kind, id int) bool {
	for _, e := range evs {
		if e.Kind == kind && e.FenceID == id {
			return true
		}
	}
	return false
}

// TestFenceDeviceCloseDropsHeldSlowRequests: a request a fence-slow fault holds when the run
// ends is dropped, not carried out at once with a reply that claims it was answered late.
func TestFenceDeviceCloseDropsHeldSlowRequests(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")
	if _, err := d.SetFault(1, Slow, time.Minute); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url+"/off/c1", "", nil)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	waitFor(t, "the fence-request", func() bool { return hasKind(rec.list(), history.KindFenceRequest, 1) })
	closed := time.Now()
	d.Close()
	if took := time.Since(closed); took > 3*time.Second {
		t.Errorf("Close took %v with a held request", took)
	}
	if err := <-answered; err == nil {
		t.Error("a request dropped at the run's end got an answer")
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("the device acted on a held request as the run ended: %v", calls)
	}
	rep := replyOf(t, rec.list(), 1)
	if rep.Result != history.FenceDropped || !strings.Contains(rep.Reason, "the run ended") {
		t.Errorf("held request recorded as %+v, want dropped because the run ended", rep)
	}
}
