package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
)

func init() {
	register(command{name: "faultproxy", summary: "run the TCP fault proxy between candidates and store (inside the store-proxy container)", run: runFaultProxy})
}

func runFaultProxy(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("faultproxy", stderr)
	addr := fs.String("api", ":"+faultproxy.APIPort, "listen address of the Toxiproxy HTTP API")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: splitbrain faultproxy [--api :8474]\n\n"+
			"Serves Toxiproxy's HTTP API; the harness creates one proxied link per candidate and\n"+
			"store endpoint and adds toxics for its proxy faults (docs/faults.md).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitUsage, usagef("--api %q: %v", *addr, err)
	}
	fmt.Fprintf(stderr, "faultproxy: API on %s\n", ln.Addr())
	if err := faultproxy.Serve(ctx, ln, stderr); err != nil {
		return exitHarness, err
	}
	return exitValid, nil
}
