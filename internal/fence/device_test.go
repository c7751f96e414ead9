package fence

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// forget, when set, makes every second Requester call fail: a source known when its
	// connection was accepted and not by the time its request is read.
	forget bool
	asked  int
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
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if f.forget && f.asked%2 == 0 {
		return "", false
	}
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
// has its connection closed at accept, or (known at accept, not at the request) gets 403;
// nothing is done, and its requests stay out of the history (another run's candidate put
// 19,976 request/reply pairs into one run's history): one log line counts them.
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
		if code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second); err == nil {
			t.Fatalf("off c2 from a non-candidate was answered %d %+v; want its connection closed", code, body)
		}
	}
	// Known when accepted, not when the request is read: 403.
	fp.mu.Lock()
	fp.requester[netip.MustParseAddr("127.0.0.1")], fp.forget, fp.asked = "c1", true, 0
	fp.mu.Unlock()
	http.DefaultClient.CloseIdleConnections()
	if code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second); err != nil || code != http.StatusForbidden || body.Error == "" {
		t.Fatalf("off c2 from a source that stopped being a candidate: %d %+v %v, want 403 with an error", code, body, err)
	}
	if evs := rec.list(); len(evs) != 0 {
		t.Errorf("requests from outside the run were recorded: %+v", evs)
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("a request from outside the run reached the power switch: %v", calls)
	}
	d.Close()
	lines := logs.matching("outside the run's candidates")
	if len(lines) != 1 || !strings.Contains(lines[0], "3 connection(s)") || !strings.Contains(lines[0], "1 request(s)") || !strings.Contains(lines[0], "127.0.0.1") {
		t.Errorf("log lines about outsiders %q, want one counting 3 connections and 1 request and naming 127.0.0.1", lines)
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
	heal(context.Background())

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
	heal(context.Background())

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
	heal(context.Background())
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

// startLimitedFence serves a device for c1..c3 with limits lim; 127.0.0.1 is c1 and
// 127.0.0.2 is c2, any other source is none of the run's.
func startLimitedFence(t *testing.T, lim limits) (*Device, *fakePower, *recorded, string) {
	t.Helper()
	fp := &fakePower{on: map[string]bool{"c1": true, "c2": true, "c3": true}, requester: map[netip.Addr]string{
		netip.MustParseAddr("127.0.0.1"): "c1", netip.MustParseAddr("127.0.0.2"): "c2"}}
	rec := &recorded{}
	d := New([]string{"c1", "c2", "c3"}, fp, rec.record, t.Logf)
	d.limits = lim
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Serve(ln)
	t.Cleanup(d.Close)
	return d, fp, rec, ln.Addr().String()
}

// dialFrom opens a TCP connection to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedBy reports whether the server closed c within d (a read ends in EOF or a reset
// rather than a timeout).
func closedBy(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// statusOver sends GET /status/c1 on c (keep-alive) and reads the answer.
func statusOver(t *testing.T, c net.Conn) int {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /status/c1 HTTP/1.1\r\nHost: fence\r\n\r\n"); err != nil {
		t.Fatalf("send: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return resp.StatusCode
}

// TestFenceDeviceClosesConnectionsFromOutsideAtAccept: a source that is not one of the
// run's candidates is closed before a byte is read, so it holds no descriptor.
func TestFenceDeviceClosesConnectionsFromOutsideAtAccept(t *testing.T) {
	_, _, rec, addr := startLimitedFence(t, defaultLimits)
	for range 50 {
		if c := dialFrom(t, "127.0.0.3", addr); !closedBy(c, 2*time.Second) {
			t.Fatal("a connection from outside the run's candidates stayed open")
		}
	}
	if c := dialFrom(t, "127.0.0.1", addr); statusOver(t, c) != http.StatusOK {
		t.Error("a candidate was not served after the outsiders")
	}
	if n := len(rec.list()); n != 2 {
		t.Errorf("%d events recorded, want the candidate's request and reply only", n)
	}
}

// TestFenceDeviceClosesIdleConnections: a keep-alive connection with no new request is
// closed after the idle timeout (it used to stay open until the run ended).
func TestFenceDeviceClosesIdleConnections(t *testing.T) {
	lim := defaultLimits
	lim.idle = 300 * time.Millisecond
	_, _, _, addr := startLimitedFence(t, lim)
	c := dialFrom(t, "127.0.0.1", addr)
	if code := statusOver(t, c); code != http.StatusOK {
		t.Fatalf("status: %d", code)
	}
	if !closedBy(c, 3*time.Second) {
		t.Error("an idle keep-alive connection was still open 3s after one request (idle timeout 300ms)")
	}
}

// TestFenceDeviceLimitsConnections: more connections than the limits allow, per source or
// in all, are closed at once; a closed one frees its place.
func TestFenceDeviceLimitsConnections(t *testing.T) {
	lim := defaultLimits
	lim.conns, lim.perSource = 4, 3
	_, _, _, addr := startLimitedFence(t, lim)
	var held []net.Conn
	for range 3 {
		c := dialFrom(t, "127.0.0.1", addr)
		if statusOver(t, c) != http.StatusOK {
			t.Fatal("a connection within the limits was not served")
		}
		held = append(held, c)
	}
	if !closedBy(dialFrom(t, "127.0.0.1", addr), 2*time.Second) {
		t.Error("a 4th connection from one source stayed open (limit 3 per source)")
	}
	c2 := dialFrom(t, "127.0.0.2", addr)
	if statusOver(t, c2) != http.StatusOK {
		t.Fatal("another source within the overall limit was not served")
	}
	if !closedBy(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
		t.Error("a 5th connection in all stayed open (limit 4)")
	}
	held[0].Close()
	var again net.Conn
	waitFor(t, "a free place after a close", func() bool {
		again = dialFrom(t, "127.0.0.1", addr)
		return !closedBy(again, 100*time.Millisecond)
	})
	if statusOver(t, again) != http.StatusOK {
		t.Error("a connection in a freed place was not served")
	}
}

// TestFenceDeviceHeldRequestOutlivesTimeouts: a request a fence-slow fault holds longer
// than the read and write timeouts is still answered, not cut.
func TestFenceDeviceHeldRequestOutlivesTimeouts(t *testing.T) {
	lim := defaultLimits
	lim.read, lim.write = 200*time.Millisecond, 200*time.Millisecond
	d, _, rec, addr := startLimitedFence(t, lim)
	if _, err := d.SetFault(1, Slow, time.Second); err != nil {
		t.Fatal(err)
	}
	code, body, err := fenceCall(t, http.MethodPost, "http://"+addr+"/off/c2", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off held 1s with 200ms read/write timeouts: %d %+v %v, want 200 off", code, body, err)
	}
	if rep := replyOf(t, rec.list(), body.ID); rep.Result != history.FenceDone {
		t.Errorf("recorded %+v, want done", rep)
	}
}

// TestFenceDeviceUnreachableHoldsPastTheReadTimeout: a request a fence-unreachable fault
// holds stays held until its caller gives up, also past the server's read timeout (whose
// expiry would cancel the request and cut the connection early).
func TestFenceDeviceUnreachableHoldsPastTheReadTimeout(t *testing.T) {
	lim := defaultLimits
	lim.read = 200 * time.Millisecond
	d, _, _, addr := startLimitedFence(t, lim)
	if _, err := d.SetFault(1, Unreachable, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := fenceCall(t, http.MethodPost, "http://"+addr+"/off/c2", time.Second)
	var ne net.Error
	if took := time.Since(start); !errors.As(err, &ne) || !ne.Timeout() || took < 900*time.Millisecond {
		t.Errorf("held request ended after %v with %v, want the caller's own timeout after 1s", took, err)
	}
}

// TestFenceDeviceRefusesALargeBody: a request needs no body; one past maxBody is refused.
func TestFenceDeviceRefusesALargeBody(t *testing.T) {
	_, fp, rec, addr := startLimitedFence(t, defaultLimits)
	resp, err := http.Post("http://"+addr+"/off/c2", "text/plain", strings.NewReader(strings.Repeat("x", maxBody+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("off with a %d-byte body: %d, want 400", maxBody+1, resp.StatusCode)
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("a refused request powered something: %v", calls)
	}
	if rep := replyOf(t, rec.list(), 1); rep.Result != history.FenceRefused {
		t.Errorf("recorded %+v, want refused", rep)
	}
	code, body, err := fenceCall(t, http.MethodPost, "http://"+addr+"/off/c2", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Errorf("off without a body after that: %d %+v %v", code, body, err)
	}
}

// TestFenceFaultHealWaitsForItsAfterEffects: a fence-slow or fence-lying fault's heal
// returns (and the nemesis records fault-end) only once the requests it held are answered
// and the power-offs it promised are done; they used to happen after the fault's window,
// where the latency checker saw an outage with no fault in effect.
func TestFenceFaultHealWaitsForItsAfterEffects(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")
	heal, err := d.SetFault(1, Slow, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _, _ = fenceCall(t, http.MethodPost, url+"/off/c1", 5*time.Second) }()
	waitFor(t, "the slow request", func() bool { return hasKind(rec.list(), history.KindFenceRequest, 1) })
	if err := heal(context.Background()); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if !hasKind(rec.list(), history.KindFenceReply, 1) || len(fp.callList()) != 1 {
		t.Fatalf("fence-slow healed before the request it held was carried out and answered: %+v", rec.list())
	}

	heal, _ = d.SetFault(2, Lying, 400*time.Millisecond)
	code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off under a lying device: %d %+v %v", code, body, err)
	}
	if err := heal(context.Background()); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if calls := fp.callList(); len(calls) != 2 || calls[1] != "off c2 by c3" {
		t.Fatalf("fence-lying healed before the power-off it promised: calls %v", calls)
	}
}

// TestFenceFaultHealThatCannotWaitDropsWhatIsOwed: when the heal's context ends first, what
// the fault still owes is dropped, so nothing of it acts after its end.
func TestFenceFaultHealThatCannotWaitDropsWhatIsOwed(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")
	healSlow, _ := d.SetFault(1, Slow, time.Minute)
	healLying, _ := d.SetFault(2, Lying, time.Minute)
	answered := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url+"/off/c1", "", nil)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	waitFor(t, "the held request", func() bool { return hasKind(rec.list(), history.KindFenceRequest, 1) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := healSlow(ctx); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the heal took %v with a 200ms context", took)
	}
	if err := <-answered; err == nil {
		t.Error("a dropped request got an answer")
	}
	rep := replyOf(t, rec.list(), 1)
	if rep.Result != history.FenceDropped || !strings.Contains(rep.Reason, "fault 1") || !strings.Contains(rep.Reason, "heal") {
		t.Errorf("held request recorded as %+v, want dropped by fault 1's heal", rep)
	}

	// Fault 2 (lying) still in effect: an acknowledged power-off, then a heal that cannot wait.
	if code, body, err := fenceCall(t, http.MethodPost, url+"/off/c2", 5*time.Second); err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off under a lying device: %d %+v %v", code, body, err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := healLying(ctx2); err != nil {
		t.Fatalf("heal: %v", err)
	}
	// The heal returned once the late power-off's goroutine ended: nothing is left to act.
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("a fault acted after its heal: %v", calls)
	}
}

// TestFenceLyingStatusTellsTheTruth: under fence-lying only the power-off's answer lies;
// GET /status reads the power state, so a caller that reads it back (docs/candidates.md
// §11, "Using it") sees "on" until the late kill and "off" after it.
func TestFenceLyingStatusTellsTheTruth(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")
	fp.offDone = make(chan string, 1)
	heal, err := d.SetFault(1, Lying, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer heal(context.Background())
	code, body, err := fenceCall(t, http.MethodPost, url+"/off/c1", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "off" {
		t.Fatalf("off under a lying device: %d %+v %v, want 200 off", code, body, err)
	}
	code, body, err = fenceCall(t, http.MethodGet, url+"/status/c1", 5*time.Second)
	if err != nil || code != http.StatusOK || body.Power != "on" {
		t.Fatalf("status right after the lying off: %d %+v %v, want 200 on (the node still runs)", code, body, err)
	}
	if rep := replyOf(t, rec.list(), body.ID); rep.Result != history.FenceDone || rep.Power != "on" {
		t.Errorf("status recorded as %+v, want done, power on", rep)
	}
	<-fp.offDone
	if _, body, _ = fenceCall(t, http.MethodGet, url+"/status/c1", 5*time.Second); body.Power != "off" {
		t.Errorf("status after the late kill: %+v, want off", body)
	}
}
