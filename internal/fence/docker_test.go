package fence

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// dockerCall sends what fence_docker sends (pycurl: GET, or POST with an empty body) and
// returns the status and the decoded body (nil for 204).
func dockerCall(t *testing.T, method, url string, timeout time.Duration) (int, any, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if len(b) == 0 {
		return resp.StatusCode, nil, nil
	}
	var body any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s %s: body is not JSON: %q", method, url, b)
	}
	return resp.StatusCode, body, nil
}

func running(t *testing.T, body any) bool {
	t.Helper()
	st, _ := body.(map[string]any)["State"].(map[string]any)
	r, ok := st["Running"].(bool)
	if !ok {
		t.Fatalf("inspect body %v has no State.Running", body)
	}
	return r
}

// fence_docker's off is kill, then inspect until State.Running is false; on is start, then
// inspect until true; list (and monitor) is containers/json?all=1.
func TestFenceDockerFaceDoesFenceDockersCalls(t *testing.T) {
	_, fp, rec, url := startTestFence(t, "c1")
	v := url + "/v1.41"
	code, body, err := dockerCall(t, http.MethodGet, v+"/containers/c2/json", 5*time.Second)
	if err != nil || code != http.StatusOK || !running(t, body) {
		t.Fatalf("inspect c2: %d %v %v, want 200 running", code, body, err)
	}
	if code, _, err = dockerCall(t, http.MethodPost, v+"/containers/c2/kill", 5*time.Second); err != nil || code != http.StatusNoContent {
		t.Fatalf("kill c2: %d %v, want 204", code, err)
	}
	if _, body, _ = dockerCall(t, http.MethodGet, v+"/containers/c2/json", 5*time.Second); running(t, body) {
		t.Error("c2 still running after kill")
	}
	code, body, _ = dockerCall(t, http.MethodGet, v+"/containers/json?all=1", 5*time.Second)
	list, _ := body.([]any)
	if code != http.StatusOK || len(list) != 3 {
		t.Fatalf("list: %d %v, want the run's 3 nodes", code, body)
	}
	for _, c := range list {
		m := c.(map[string]any)
		name := m["Names"].([]any)[0].(string)
		if exited := strings.HasPrefix(m["Status"].(string), "Exit"); exited != (name == "/c2") {
			t.Errorf("list entry %v: only c2 is off", m)
		}
	}
	if code, _, _ = dockerCall(t, http.MethodPost, url+"/containers/c2/start", 5*time.Second); code != http.StatusNoContent {
		t.Errorf("start c2 (no version prefix): %d, want 204", code)
	}
	if got, want := strings.Join(fp.callList(), "; "), "off c2 by c1; on c2"; got != want {
		t.Errorf("power calls %q, want %q", got, want)
	}
	var actions []string
	for _, e := range rec.list() {
		if e.Kind == history.KindFenceReply {
			if e.Result != history.FenceDone || e.Node != "c1" {
				t.Errorf("reply %+v: want done for requester c1", e)
			}
			actions = append(actions, e.Action+" "+e.Target)
		}
	}
	if got, want := strings.Join(actions, ", "), "status c2, off c2, status c2, status , on c2"; got != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
}

// The Docker face is no Docker engine: anything but the power calls on the run's own
// candidates is refused (recorded), and nothing reaches the power switch.
func TestFenceDockerFaceRefusesAllElse(t *testing.T) {
	_, fp, rec, url := startTestFence(t, "c1")
	v := url + "/v1.41"
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/containers/c4/kill", 404},
		{"POST", "/containers/splitbrain-run-c2/kill", 404},
		{"POST", "/containers/resource/kill", 404},
		{"GET", "/containers/etcd-1/json", 404},
		{"POST", "/containers/%2e%2e%2fc2/kill", 404},
		{"POST", "/containers/c2/restart", 404},
		{"POST", "/containers/c2/stop", 404},
		{"POST", "/containers/c2/pause", 404},
		{"DELETE", "/containers/c2", 404},
		{"POST", "/containers/c2/exec", 404},
		{"POST", "/containers/create", 404},
		{"GET", "/containers/c2/logs", 404},
		{"POST", "/containers/c2/kill?signal=TERM", 404},
		{"GET", "/images/json", 404},
		{"GET", "/info", 404},
		{"GET", "/version", 404},
		{"POST", "/networks/create", 404},
		{"GET", "/containers/c2/kill", 405},
		{"POST", "/containers/c2/json", 405},
		{"POST", "/containers/json", 405},
		{"GET", "/containers/c2/start", 405},
	} {
		code, body, err := dockerCall(t, tc.method, v+tc.path, 5*time.Second)
		if err != nil || code != tc.code {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, code, err, tc.code)
			continue
		}
		if m, _ := body.(map[string]any); m == nil || m["message"] == "" {
			t.Errorf("%s %s: body %v, want Docker's {\"message\"}", tc.method, tc.path, body)
		}
	}
	for _, e := range rec.list() {
		if e.Kind == history.KindFenceReply && e.Result != history.FenceRefused {
			t.Errorf("recorded %+v, want every request refused", e)
		}
	}
	if calls := fp.callList(); len(calls) != 0 {
		t.Errorf("refused requests reached the power switch: %v", calls)
	}
}

// Sources outside the run get nothing through the Docker face either.
func TestFenceDockerFaceRefusesSourcesOutsideTheRun(t *testing.T) {
	_, fp, rec, url := startTestFence(t, "")
	if code, _, err := dockerCall(t, http.MethodPost, url+"/v1.41/containers/c2/kill", 5*time.Second); err == nil && code == http.StatusNoContent {
		t.Errorf("an outside source killed c2: %d", code)
	}
	if len(fp.callList()) != 0 || len(rec.list()) != 0 {
		t.Errorf("an outside source reached the switch (%v) or the history (%v)", fp.callList(), rec.list())
	}
}

// The fence faults hold on the Docker face: unreachable drops, slow is late, lying answers
// the kill at once while the inspect tells the truth until the late power-off.
func TestFenceDockerFaceFaults(t *testing.T) {
	d, fp, rec, url := startTestFence(t, "c3")
	v := url + "/v1.41"
	heal, _ := d.SetFault(1, Unreachable, 0)
	if _, _, err := dockerCall(t, http.MethodPost, v+"/containers/c1/kill", 200*time.Millisecond); err == nil {
		t.Fatal("kill through an unreachable device got an answer")
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(fp.callList()) != 0 {
		t.Fatalf("an unreachable device powered something: %v", fp.callList())
	}

	fp.offDone = make(chan string, 1)
	heal, _ = d.SetFault(2, Lying, 300*time.Millisecond)
	if code, _, err := dockerCall(t, http.MethodPost, v+"/containers/c1/kill", 5*time.Second); err != nil || code != http.StatusNoContent {
		t.Fatalf("kill under a lying device: %d %v, want 204", code, err)
	}
	if _, body, _ := dockerCall(t, http.MethodGet, v+"/containers/c1/json", 5*time.Second); !running(t, body) {
		t.Error("inspect right after a lying kill: want still running (the inspect reads the truth)")
	}
	<-fp.offDone
	if _, body, _ := dockerCall(t, http.MethodGet, v+"/containers/c1/json", 5*time.Second); running(t, body) {
		t.Error("inspect after the late power-off: want not running")
	}
	_ = heal(context.Background())
	acked := false
	for _, e := range rec.list() {
		acked = acked || (e.Kind == history.KindFenceReply && e.Result == history.FenceAcknowledged && e.Target == "c1")
	}
	if !acked {
		t.Errorf("the lying kill is not recorded as acknowledged: %v", rec.list())
	}

	heal, _ = d.SetFault(3, Slow, 100*time.Millisecond)
	start := time.Now()
	if code, _, err := dockerCall(t, http.MethodPost, v+"/containers/c2/kill", 5*time.Second); err != nil || code != http.StatusNoContent {
		t.Fatalf("kill under a slow device: %d %v", code, err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Error("a slow device answered early")
	}
	<-fp.offDone
	_ = heal(context.Background())
}

// fence_docker always speaks TLS (ssl_insecure without client certificates): the same port
// answers it, with the same access rules.
func TestFenceDockerFaceOverTLS(t *testing.T) {
	_, fp, _, url := startTestFence(t, "c1")
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequest(http.MethodPost, strings.Replace(url, "http://", "https://", 1)+"/v1.41/containers/c2/kill", nil)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.TLS == nil {
		t.Fatalf("kill over TLS: %d (tls %v), want 204", resp.StatusCode, resp.TLS != nil)
	}
	if got := strings.Join(fp.callList(), "; "); got != "off c2 by c1" {
		t.Errorf("power calls %q", got)
	}
	_, _, _, outside := startTestFence(t, "")
	req, _ = http.NewRequest(http.MethodPost, strings.Replace(outside, "http://", "https://", 1)+"/v1.41/containers/c2/kill", nil)
	if resp, err := cl.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("an outside source got an answer over TLS: %d", resp.StatusCode)
	}
}
