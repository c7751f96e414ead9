package resource

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) events(t *testing.T) []history.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Event
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		e, err := ParseLine(sc.Bytes())
		if err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func post(t *testing.T, h http.Handler, body string) (int, WriteResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/write", strings.NewReader(body)))
	var resp WriteResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("answer %q is not JSON: %v", rec.Body.String(), err)
	}
	return rec.Code, resp
}

func w(node string, token int64, id string) string {
	return fmt.Sprintf(`{"node":%q,"token":%d,"write_id":%q}`, node, token, id)
}

func TestFencedAcceptsOnlyTokensAtOrAboveMax(t *testing.T) {
	var log syncBuf
	s := New(Fenced, &log)
	h := s.Handler()
	steps := []struct {
		token int64
		code  int
		max   int64
	}{{3, 200, 3}, {3, 200, 3}, {5, 200, 5}, {4, 409, 5}, {1, 409, 5}, {5, 200, 5}, {9, 200, 9}}
	for i, st := range steps {
		code, resp := post(t, h, w("c1", st.token, fmt.Sprint("c1-", i)))
		if code != st.code || resp.Max != st.max {
			t.Fatalf("step %d token %d: got %d max %d, want %d max %d", i, st.token, code, resp.Max, st.code, st.max)
		}
	}
	evs := log.events(t)
	if len(evs) != len(steps) {
		t.Fatalf("%d log lines, want %d", len(evs), len(steps))
	}
	rej := evs[3]
	if rej.Kind != history.KindDecision || rej.Result != history.ResultRejected || !rej.Stale || rej.Max != 5 || rej.Token != 4 || rej.Mode != "fenced" || rej.Node != "c1" {
		t.Fatalf("rejection logged as %+v", rej)
	}
	if st := s.State(); st.Accepted != 5 || st.Rejected != 2 || st.StaleAccepted != 0 || st.Max != 9 {
		t.Fatalf("state %+v", st)
	}
}

func TestUnfencedAcceptsStaleButMarksIt(t *testing.T) {
	var log syncBuf
	s := New(Unfenced, &log)
	h := s.Handler()
	for i, tok := range []int64{5, 2, 7} {
		if code, _ := post(t, h, w("c2", tok, fmt.Sprint(i))); code != 200 {
			t.Fatalf("token %d: code %d in unfenced mode", tok, code)
		}
	}
	evs := log.events(t)
	if !evs[1].Stale || evs[1].Result != history.ResultAccepted || evs[1].Max != 5 || evs[0].Stale || evs[2].Stale {
		t.Fatalf("stale marking wrong: %+v", evs)
	}
	if st := s.State(); st.StaleAccepted != 1 || st.Max != 7 || st.Accepted != 3 {
		t.Fatalf("state %+v", st)
	}
}

func TestBadRequestsAre4xxAndLogged(t *testing.T) {
	var log syncBuf
	s := New(Fenced, &log)
	h := s.Handler()
	cases := []struct{ body, want string }{
		{``, "body must be JSON"},
		{`nonsense`, "body must be JSON"},
		{`{"node":"c1","token":1}`, `missing "write_id"`},
		{`{"token":1,"write_id":"a"}`, `missing "node"`},
		{`{"node":"c1","write_id":"a"}`, `missing "token"`},
		{`{"node":"c1","token":0,"write_id":"a"}`, "integers >= 1"},
		{`{"node":"c1","token":-4,"write_id":"a"}`, "integers >= 1"},
		{`{"node":"c1","token":1.5,"write_id":"a"}`, "not a 64-bit"},
		{`{"node":"c1","token":"1","write_id":"a"}`, "not a 64-bit"},
		{`{"node":"c1","token":1,"write_id":"a","x":1}`, "unknown field"},
		{`{"node":"c1","token":1,"write_id":"a"}{}`, "more than one"},
		{`{"node":"c1","token":1,"write_id":"` + strings.Repeat("a", 300) + `"}`, "at most"},
		{`{"node":"` + strings.Repeat("a", 5000) + `"}`, "larger than"},
	}
	for _, c := range cases {
		code, resp := post(t, h, c.body)
		if code < 400 || code > 499 || !strings.Contains(resp.Error, c.want) {
			t.Errorf("%.60q: got %d %q, want 4xx saying %q", c.body, code, resp.Error, c.want)
		}
	}
	// Duplicate write id.
	if code, _ := post(t, h, w("c1", 1, "dup")); code != 200 {
		t.Fatal("first write refused")
	}
	if code, resp := post(t, h, w("c1", 1, "dup")); code != 409 || resp.Error == "" {
		t.Fatalf("duplicate write id: %d %+v", code, resp)
	}
	// Wrong method.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/write", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /write: %d", rec.Code)
	}
	evs := log.events(t)
	bad := 0
	for _, e := range evs {
		if e.Kind == history.KindBadRequest {
			bad++
			if e.Reason == "" {
				t.Errorf("bad request without reason: %+v", e)
			}
		}
	}
	if want := len(cases) + 2; bad != want {
		t.Fatalf("%d bad-request lines, want %d", bad, want)
	}
	if st := s.State(); st.BadRequests != int64(bad) || st.Accepted != 1 || st.Max != 1 {
		t.Fatalf("state %+v", st)
	}
}

func TestHealthAndState(t *testing.T) {
	s := New(Fenced, io.Discard)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	http.Post(srv.URL+"/write", "application/json", strings.NewReader(w("c1", 4, "x")))
	resp, err = http.Get(srv.URL + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Max != 4 || st.Mode != Fenced || st.Accepted != 1 {
		t.Fatalf("state %+v %v", st, err)
	}
}

// Concurrent writers: the log, read in order, must replay to the same decisions: each
// line's max is the running max of the accepted tokens before it.
func TestConcurrentWritesLogInDecisionOrder(t *testing.T) {
	for _, mode := range []Mode{Fenced, Unfenced} {
		var log syncBuf
		s := New(mode, &log)
		srv := httptest.NewServer(s.Handler())
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					tok := int64((i*7+g*13)%50 + 1)
					resp, err := http.Post(srv.URL+"/write", "application/json", strings.NewReader(w(fmt.Sprint("c", g), tok, fmt.Sprintf("c%d-%d", g, i))))
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}(g)
		}
		wg.Wait()
		srv.Close()
		evs := log.events(t)
		if len(evs) != 800 {
			t.Fatalf("%s: %d lines, want 800", mode, len(evs))
		}
		var max, lastT int64
		for i, e := range evs {
			if e.Max != max {
				t.Fatalf("%s line %d: logged max %d, replayed max %d: log order differs from decision order", mode, i, e.Max, max)
			}
			if e.T < lastT {
				t.Fatalf("%s line %d: time goes back", mode, i)
			}
			lastT = e.T
			wantAccept := mode == Unfenced || e.Token >= max
			if (e.Result == history.ResultAccepted) != wantAccept || e.Stale != (e.Token < max) {
				t.Fatalf("%s line %d: %+v with running max %d", mode, i, e, max)
			}
			if e.Result == history.ResultAccepted && e.Token > max {
				max = e.Token
			}
		}
		if s.State().Max != max {
			t.Fatalf("%s: state max %d, replay %d", mode, s.State().Max, max)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	s := New(Fenced, io.Discard)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Decide(WriteRequest{Node: "c1", Token: int64(i%100 + 1), WriteID: fmt.Sprint(i)})
	}
}

func FuzzWriteRequest(f *testing.F) {
	for _, s := range []string{`{"node":"c1","token":1,"write_id":"a"}`, `{"node":"c1","token":-1}`, `{"token":1e9}`, `[]`, ``, `{"node":"c1","token":1,"write_id":"a"}{}`} {
		f.Add([]byte(s))
	}
	s := New(Fenced, io.Discard)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/write", bytes.NewReader(body)))
		if rec.Code != 200 && rec.Code != 409 && (rec.Code < 400 || rec.Code > 499) {
			t.Fatalf("body %q: status %d", body, rec.Code)
		}
		if rec.Code == 200 {
			req, err := parseWrite(body)
			if err != nil || req.Token < 1 {
				t.Fatalf("accepted %q (%+v, %v)", body, req, err)
			}
		}
	})
}

// Node names outside the contract's id charset are refused and never reach the decision
// log's node field (issue 14 item 4: they ended up in Porcupine's tooltip as HTML).
func TestNodeNameCharset(t *testing.T) {
	var log syncBuf
	h := New(Fenced, &log).Handler()
	for _, node := range []string{`<img src=x onerror="alert(1)">`, `c1"`, "c1\tx", "c 1", "ç1", "c1/../x"} {
		code, resp := post(t, h, w(node, 1, "id-"+fmt.Sprint(len(node))))
		if code != http.StatusBadRequest || !strings.Contains(resp.Error, "not a node id") {
			t.Errorf("node %q: %d %q, want 400 'not a node id'", node, code, resp.Error)
		}
	}
	for _, node := range []string{"c1", "node-2", "a_b.c"} {
		if code, resp := post(t, h, w(node, 5, "ok-"+node)); code != 200 {
			t.Errorf("node %q refused: %d %+v", node, code, resp)
		}
	}
	for _, e := range log.events(t) {
		if strings.ContainsAny(e.Node, `<>"& `) {
			t.Errorf("a refused node name reached the log's node field: %+v", e)
		}
	}
}
