package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// FullBinary runs the rows the core build does not link (Case.Unlinked) with the full
// splitbrain binary: `make chaos` starts the core build's matrix at once, so the first
// verdicts do not wait for client-go, the AWS SDK and Consul's API to compile, and builds the
// full binary here, in the background at the lowest CPU weight, while the core's rows run.
// Each unlinked row is then one `splitbrain matrix` child of the full binary (its own store
// cluster: the Kubernetes store is never reused anyway), whose result file the row's Result
// is read from; its run directory lands in the same store and index.
type FullBinary struct {
	Path       string // the full binary, built by StartFullBuild
	MatrixFile string
	Tier       string
	StoreRoot  string
	ready      chan struct{} // closed when the build ended; err is its outcome
	err        error
}

// StartFullBuild builds cmd/splitbrain from moduleRoot into path in the background (go build
// under nice 19: an up-to-date binary costs a cache lookup). Its output goes to log.
func StartFullBuild(ctx context.Context, moduleRoot, path string, log io.Writer) *FullBinary {
	f := &FullBinary{Path: path, ready: make(chan struct{})}
	if moduleRoot == "" {
		f.err = errors.New("no source tree to build the full binary from: give --file a matrix inside the splitbrain module")
		close(f.ready)
		return f
	}
	go func() {
		defer close(f.ready)
		start := time.Now()
		tmp := path + ".building"
		var out bytes.Buffer
		// -trimpath as the store servers' builds (internal/images): the packages the full
		// binary shares with kube-apiserver and etcd are compiled once for both.
		cmd := exec.CommandContext(ctx, "nice", "-n", "19", "go", "build", "-trimpath", "-o", tmp, "./cmd/splitbrain")
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the candidate image copies it
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			os.Remove(tmp)
			f.err = fmt.Errorf("building the full binary (go build ./cmd/splitbrain in %s): %v: %s", moduleRoot, err, strings.TrimSpace(out.String()))
			fmt.Fprintf(log, "matrix: %v\n", f.err)
			return
		}
		// Renamed into place whole: a reader never sees a half-written binary.
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			f.err = fmt.Errorf("full binary: %w", err)
			fmt.Fprintf(log, "matrix: %v\n", f.err)
			return
		}
		fmt.Fprintf(log, "matrix: full binary %s built in %v (for the rows the core build does not link)\n", path, time.Since(start).Round(time.Second))
	}()
	return f
}

// UseFullBinary is a FullBinary of a binary built already (path), ready at once.
func UseFullBinary(path string) *FullBinary {
	f := &FullBinary{Path: path, ready: make(chan struct{})}
	close(f.ready)
	return f
}

// Ready is closed when the build has ended (Run then reports a failed one).
func (f *FullBinary) Ready() <-chan struct{} { return f.ready }

// resultRecord is one row's Result as a child matrix writes it (--results) and FullBinary.Run
// reads it back.
type resultRecord struct {
	Name     string           `json:"name"`
	Outcome  *harness.Outcome `json:"outcome,omitempty"`
	Observed Observed         `json:"observed"`
	Diffs    []string         `json:"diffs,omitempty"`
	Notes    []string         `json:"notes,omitempty"`
	Err      string           `json:"error,omitempty"`
	Wall     time.Duration    `json:"wall"`
}

// WriteResults writes the results for a parent matrix to read (FullBinary.Run).
func WriteResults(path string, rs []Result) error {
	recs := make([]resultRecord, 0, len(rs))
	for _, r := range rs {
		rec := resultRecord{Name: r.Case.Name, Outcome: r.Outcome, Observed: r.Observed, Diffs: r.Diffs, Notes: r.Notes, Wall: r.Wall}
		if r.Err != nil {
			rec.Err = r.Err.Error()
		}
		recs = append(recs, rec)
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Run runs case c with the full binary once it is built: a child `splitbrain matrix` of that
// one row, in the same store, and returns its result.
func (f *FullBinary) Run(ctx context.Context, c Case) Result {
	start := time.Now()
	res := Result{Case: c}
	fail := func(err error) Result {
		res.Err, res.Wall = err, time.Since(start)
		res.Diffs = append(res.Diffs, "not run by the full binary: "+err.Error())
		return res
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
		return fail(context.Cause(ctx))
	}
	if f.err != nil {
		return fail(f.err)
	}
	dir, err := os.MkdirTemp("", "splitbrain-row-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	resultsPath := filepath.Join(dir, "results.json")
	args := []string{"matrix", "--file", f.MatrixFile, "--tags", f.Tier, "--filter", "^" + regexp.QuoteMeta(c.Name) + "$",
		"--store", f.StoreRoot, "--results", resultsPath}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, f.Path, args...)
	// Its candidates run the full binary too (the candidate image copies SPLITBRAIN_BINARY).
	cmd.Env = append(os.Environ(), images.EnvBinary+"="+f.Path)
	cmd.Stdout, cmd.Stderr = &out, &out
	// SIGINT, not SIGKILL, on cancel: the child heals its faults and tears its cluster down.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute
	runErr := cmd.Run()
	b, err := os.ReadFile(resultsPath)
	if err != nil {
		return fail(fmt.Errorf("%s matrix %s: no results (%v; exit: %v); its output:\n%s", f.Path, strings.Join(args[1:], " "), err, runErr, tail(out.String(), 2000)))
	}
	var recs []resultRecord
	if err := json.Unmarshal(b, &recs); err != nil || len(recs) != 1 || recs[0].Name != c.Name {
		return fail(fmt.Errorf("%s: want one result for %s: %v (%d results)", resultsPath, c.Name, err, len(recs)))
	}
	rec := recs[0]
	res.Outcome, res.Observed, res.Diffs, res.Notes = rec.Outcome, rec.Observed, rec.Diffs, rec.Notes
	if rec.Err != "" {
		res.Err = errors.New(rec.Err)
	}
	res.Wall = time.Since(start)
	return res
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
