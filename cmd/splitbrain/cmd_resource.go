package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/splitbrain-chaos/splitbrain/workloads/resource"
)

func init() {
	register(command{name: "resource", summary: "run the fenced resource (inside the resource container)", run: runResource})
}

func runResource(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("resource", stderr)
	addr := fs.String("addr", ":8080", "listen address")
	modeFlag := fs.String("mode", string(resource.Fenced), "fenced (reject tokens below the max) or unfenced (accept all, mark stale)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: splitbrain resource [--addr :8080] [--mode fenced|unfenced]\n\n"+
			"Serves POST /write, GET /healthz, GET /state (docs/candidates.md); prints every decision\n"+
			"as one history event line on stdout.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	mode, err := resource.ParseMode(*modeFlag)
	if err != nil {
		return exitUsage, usagef("--mode: %v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitUsage, usagef("--addr %q: %v", *addr, err)
	}
	srv := resource.New(mode, stdout)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "resource: %s mode, listening on %s\n", mode, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return exitHarness, err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return exitHarness, err
	}
	if err := srv.LogErr(); err != nil {
		return exitHarness, fmt.Errorf("decision log: %w", err)
	}
	st := srv.State()
	fmt.Fprintf(stderr, "resource: %d accepted (%d stale), %d rejected, %d bad requests, max token %d\n",
		st.Accepted, st.StaleAccepted, st.Rejected, st.BadRequests, st.Max)
	return exitValid, nil
}
