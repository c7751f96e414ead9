package reports

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// DNS rebinding (issue 14 item 6): a request naming another host gets 421; the names the
// server is reached by on this machine work.
func TestServeChecksHost(t *testing.T) {
	store := makeStore(t)
	h, closeRoot, err := StoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	srv := httptest.NewServer(HostCheck(h, "127.0.0.1:18931"))
	defer srv.Close()
	for host, want := range map[string]int{
		"attacker.example:18931": http.StatusMisdirectedRequest,
		"attacker.example":       http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io:18931": http.StatusMisdirectedRequest,
		"localhost:18931":        http.StatusOK,
		"LOCALHOST":              http.StatusOK,
		"127.0.0.1:18931":        http.StatusOK,
		"[::1]:18931":            http.StatusOK,
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// A FIFO (or any non-regular file) in the store is refused at once instead of hanging the
// request until a writer appears.
func TestServeFIFODoesNotHang(t *testing.T) {
	store := makeStore(t)
	if err := syscall.Mkfifo(filepath.Join(store, "pipe.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(store, "zero.log"))
	h, closeRoot, err := StoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRoot()
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, p := range []string{"/pipe.log", "/zero.log"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatalf("GET %s: %v (hangs?)", p, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 403", p, resp.StatusCode)
		}
	}
}
