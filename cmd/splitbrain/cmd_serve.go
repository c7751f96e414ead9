package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/splitbrain-chaos/splitbrain/reports"
)

func init() {
	register(command{name: "serve", summary: "serve the store directory (index, reports, logs) read-only over HTTP on loopback", run: runServe})
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", reports.DefaultServeAddr, "listen address; loopback by default (a non-loopback address exposes logs and commands of every run)")
	store := fs.String("store", defaultStoreDir(), "store directory to serve")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: splitbrain serve [--addr 127.0.0.1:8080] [--store DIR]")
		fmt.Fprintln(stderr, "Serves DIR read-only (GET/HEAD); nothing outside DIR can be read. Ctrl-C stops it.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return exitUsage, usagef("--addr %q: want host:port, e.g. 127.0.0.1:8080", *addr)
	}
	h, closeRoot, err := reports.StoreHandler(*store)
	if err != nil {
		return exitHarness, err
	}
	defer closeRoot()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitHarness, fmt.Errorf("listen on %s: %w (pick another port with --addr)", *addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "warning: %s is not a loopback address: anyone who can reach it can read every run\n", *addr)
	}
	fmt.Fprintf(stdout, "serving %s read-only at http://%s/ (Ctrl-C stops)\n", *store, ln.Addr())
	srv := &http.Server{Handler: reports.HostCheck(h, ln.Addr().String()), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return exitHarness, err
	}
	return exitValid, nil
}
