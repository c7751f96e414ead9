//go:build !core

package candidates

import (
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
)

// TestInheritedListener: the sidecar serves on an inherited listening socket (what an
// application passes as fd 3, docs/candidates.md k8s-sidecar) and leaves any other
// descriptor open and unused, so sidecarListener falls back to 127.0.0.1:7070.
func TestInheritedListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lf, err := ln.(*net.TCPListener).File() // a duplicate descriptor, as a child inherits it
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	got := inheritedListener(int(lf.Fd()))
	if got == nil {
		t.Fatalf("a listening socket on fd %d was not taken", lf.Fd())
	}
	if got.Addr().String() != ln.Addr().String() {
		t.Fatalf("listener on %s, want the inherited %s", got.Addr(), ln.Addr())
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })}
	go srv.Serve(got)
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/leader")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("status %d through the inherited socket", resp.StatusCode)
	}

	// Not listeners: a pipe, an unconnected TCP socket, a closed descriptor.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sock, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(sock)
	closed, err := syscall.Dup(sock)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(closed)
	for name, fd := range map[string]int{"pipe": int(w.Fd()), "unconnected socket": sock, "closed descriptor": closed} {
		if l := inheritedListener(fd); l != nil {
			l.Close()
			t.Errorf("%s (fd %d) taken as a listener", name, fd)
		}
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Errorf("the probe closed the pipe: %v", err)
	}
	if _, err := syscall.GetsockoptInt(sock, syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil {
		t.Errorf("the probe closed the socket: %v", err)
	}
}
