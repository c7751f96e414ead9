package harness

import (
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

func TestResourcePlace(t *testing.T) {
	// No interface of this machine is named after this id, so the host cannot serve it.
	nw := &platform.Network{ID: "0000deadbeef0000", Subnet: netip.MustParsePrefix("198.19.250.0/24")}
	cases := []struct {
		env      string
		wantHost bool
		wantErr  string
		wantWhy  string
	}{
		{"container", false, "", ResourceEnv + "=container"},
		{"", false, "", "no interface br-0000deadbeef"},
		{"auto", false, "", "no interface br-0000deadbeef"},
		{"host", false, "cannot be served from here: no interface br-0000deadbeef", ""},
		{"sidecar", false, `SPLITBRAIN_RESOURCE="sidecar": want host, container or auto`, ""},
	}
	for _, c := range cases {
		t.Setenv(ResourceEnv, c.env)
		host, why, err := resourcePlace(nw)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s=%q: err %v, want one containing %q", ResourceEnv, c.env, err, c.wantErr)
			}
			continue
		}
		if err != nil || host != c.wantHost || !strings.Contains(why, c.wantWhy) {
			t.Errorf("%s=%q: host %v why %q err %v, want host %v why containing %q", ResourceEnv, c.env, host, why, err, c.wantHost, c.wantWhy)
		}
	}
}

func TestUnreachedResource(t *testing.T) {
	addr := netip.MustParseAddrPort("198.19.3.1:40000")
	if msg := unreachedResource(0, 0, addr); msg != "" {
		t.Errorf("no writes, no requests: %q, want nothing to say", msg)
	}
	if msg := unreachedResource(5, 12, addr); msg != "" {
		t.Errorf("requests arrived: %q, want nothing to say", msg)
	}
	msg := unreachedResource(0, 12, addr)
	for _, want := range []string{"12 times", "198.19.3.1:40000", "firewall", ResourceEnv + "=container"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestHostResourceServesAndLogs: the in-process resource decides as the container does,
// hands every decision line on in order and keeps them in resource.log.
func TestHostResourceServesAndLogs(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var lines []string
	h, err := startHostResource(netip.MustParseAddr("127.0.0.1"), resource.Fenced, dir, func(b []byte) {
		mu.Lock()
		lines = append(lines, string(b))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) int {
		resp, err := http.Post("http://"+h.addr.String()+"/write", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(`{"node":"c1","token":2,"write_id":"c1-1"}`); c != http.StatusOK {
		t.Errorf("first write: %d, want 200", c)
	}
	if c := post(`{"node":"c2","token":1,"write_id":"c2-1"}`); c != http.StatusConflict {
		t.Errorf("stale write on the fenced resource: %d, want 409", c)
	}
	if err := h.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.close(context.Background()); err != nil {
		t.Errorf("second close: %v", err)
	}
	if n := h.requests.Load(); n != 2 {
		t.Errorf("%d requests counted, want 2", n)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"result":"accepted"`) || !strings.Contains(lines[1], `"result":"rejected"`) {
		t.Fatalf("decision lines %q: want accepted then rejected", lines)
	}
	file, err := os.ReadFile(filepath.Join(dir, "resource.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, []byte(lines[0]+lines[1])) {
		t.Errorf("resource.log %q, want the decision lines %q", file, lines)
	}
	if _, err := http.Get("http://" + h.addr.String() + "/healthz"); err == nil {
		t.Errorf("the resource still answers after close")
	}
}

// testResource stands in for a started resource where a unit test builds candidate specs.
var testResource = &resourceStage{url: "http://resource:8080", at: "a test's stand-in"}
