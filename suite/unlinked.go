package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

// FullBinary runs the rows the core build does not link (Case.Unlinked) with the full
// splitbrain binary: `make chaos` starts the core build's matrix at once, so the first
// verdicts do not wait for client-go, the AWS SDK and Consul's API to compile, and builds the
// full binary here, in the background at the lowest CPU weight, while the core's rows run.
// The unlinked rows then go to one child `splitbrain matrix --serve` of the full binary,
// which runs each row it is handed with one store pool, so the rows of a store reuse its
// clusters as the core's rows do (a child per row started a cluster per row: 16 Kubernetes
// clusters for the default tier's 16 Kubernetes rows); their run directories land in the
// same store and index.
type FullBinary struct {
	Path       string // the full binary, built by StartFullBuild
	MatrixFile string
	Tier       string
	StoreRoot  string
	Parallel   int           // the parent's rows at once: the child's pool keeps that many idle clusters
	FreshStore bool          // the parent's --fresh-stores
	ready      chan struct{} // closed when the build ended; err is its outcome
	err        error

	mu    sync.Mutex
	child *serveChild // the running child, nil before the first row and after it exited
	stats harness.PoolStats
}

// serveChild is one running `splitbrain matrix --serve` and the rows handed to it.
type serveChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	waiting map[string]chan resultRecord // by row name
	done    chan struct{}                // closed when the child has exited; err is why
	err     error
	out     *tailBuffer // its stderr: the rows' progress and any failure

	interruptOnce sync.Once
}

// interrupt sends the child one SIGINT, however many of its rows are cancelled: it heals its
// faults and tears its clusters down on the first, and a second one kills it at once.
func (ch *serveChild) interrupt() {
	ch.interruptOnce.Do(func() { _ = ch.cmd.Process.Signal(os.Interrupt) })
}

// StartFullBuild builds cmd/splitbrain from moduleRoot into path in the background (go build
// under nice 19: an up-to-date binary costs a cache lookup, no link). Its output goes to log.
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
		// go build links only when its -o file is missing or out of date (its build ID): into a
		// fresh path it relinked the 1,146-package binary on every make chaos, 12-32 s beside
		// the rows with a slot held for it (docs/performance.md). So the build starts from a
		// copy of the binary already there, and an up-to-date one is left as it is.
		copied, err := copyExecutable(path, tmp)
		if err != nil {
			fmt.Fprintf(log, "matrix: full binary: %v (building it anew)\n", err)
		}
		var out bytes.Buffer
		// -trimpath as the store servers' builds (internal/images): the packages the full
		// binary shares with kube-apiserver and etcd are compiled once for both.
		cmd := exec.CommandContext(ctx, "nice", "-n", "19", "go", "build", "-trimpath", "-o", tmp, "./cmd/splitbrain")
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the candidate image copies it
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := images.RunGo(cmd); err != nil {
			os.Remove(tmp)
			f.err = fmt.Errorf("building the full binary (go build ./cmd/splitbrain in %s): %v: %s", moduleRoot, err, strings.TrimSpace(out.String()))
			fmt.Fprintf(log, "matrix: %v\n", f.err)
			return
		}
		// An up-to-date -o file is only touched; a new link replaces the file (a new inode).
		if st, err := os.Stat(tmp); err == nil && copied != nil && os.SameFile(st, copied) {
			os.Remove(tmp)
			fmt.Fprintf(log, "matrix: full binary %s up to date (checked in %v)\n", path, time.Since(start).Round(time.Second))
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

// copyExecutable copies src to dst (mode 0755) and returns dst's state after the copy, or nil
// and no error when src does not exist.
func copyExecutable(src, dst string) (os.FileInfo, error) {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer in.Close()
	os.Remove(dst) // a leftover of an interrupted build
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return nil, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return os.Stat(dst)
}

// UseFullBinary is a FullBinary of a binary built already (path), ready at once.
func UseFullBinary(path string) *FullBinary {
	f := &FullBinary{Path: path, ready: make(chan struct{})}
	close(f.ready)
	return f
}

// Ready is closed when the build has ended (Run then reports a failed one).
func (f *FullBinary) Ready() <-chan struct{} { return f.ready }

// resultRecord is one row's Result as a child matrix writes it (--results, --serve) and
// FullBinary.Run reads it back.
type resultRecord struct {
	Name     string           `json:"name"`
	Outcome  *harness.Outcome `json:"outcome,omitempty"`
	Observed Observed         `json:"observed"`
	Diffs    []string         `json:"diffs,omitempty"`
	Notes    []string         `json:"notes,omitempty"`
	Err      string           `json:"error,omitempty"`
	Wall     time.Duration    `json:"wall"`
}

// record is a Result as a child writes it.
func record(r Result) *resultRecord {
	rec := resultRecord{Name: r.Case.Name, Outcome: r.Outcome, Observed: r.Observed, Diffs: r.Diffs, Notes: r.Notes, Wall: r.Wall}
	if r.Err != nil {
		rec.Err = r.Err.Error()
	}
	return &rec
}

// WriteResults writes the results for a parent matrix to read (--results).
func WriteResults(path string, rs []Result) error {
	recs := make([]resultRecord, 0, len(rs))
	for _, r := range rs {
		recs = append(recs, *record(r))
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Run runs case c with the full binary once it is built: it hands the row's name to the
// child matrix (started with the first row, again after one exited) and returns the result
// the child sends back.
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
	ch, got, err := f.hand(c.Name)
	if err != nil {
		return fail(err)
	}
	var rec resultRecord
	select {
	case rec = <-got:
	case <-ch.done:
		select { // the result may have come just before the exit
		case rec = <-got:
		default:
			return fail(fmt.Errorf("%s matrix --serve exited before the row's result (%v); its output:\n%s", f.Path, ch.err, tail(ch.out.String(), 2000)))
		}
	case <-ctx.Done():
		// SIGINT, not SIGKILL: the child heals its faults and tears its clusters down.
		ch.interrupt()
		return fail(context.Cause(ctx))
	}
	res.Outcome, res.Observed, res.Diffs, res.Notes = rec.Outcome, rec.Observed, rec.Diffs, rec.Notes
	if rec.Err != "" {
		res.Err = errors.New(rec.Err)
	}
	res.Wall = time.Since(start)
	return res
}

// hand gives the row's name to the running child, starting one if none runs, and returns
// the child and where its result will arrive.
func (f *FullBinary) hand(name string) (*serveChild, chan resultRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.child
	if ch != nil {
		select {
		case <-ch.done:
			ch = nil
		default:
		}
	}
	if ch == nil {
		var err error
		if ch, err = f.startChild(); err != nil {
			return nil, nil, err
		}
		f.child = ch
	}
	got := make(chan resultRecord, 1)
	ch.waiting[name] = got
	if _, err := io.WriteString(ch.stdin, name+"\n"); err != nil {
		delete(ch.waiting, name)
		return nil, nil, fmt.Errorf("handing %s to %s matrix --serve: %w", name, f.Path, err)
	}
	return ch, got, nil
}

// Retire tells the running child that a store group's last row has ended: its pool
// removes that group's idle clusters (StoreRetirer). Without a child there is nothing to do.
func (f *FullBinary) Retire(store string, nodes int) {
	b, err := json.Marshal(serveControl{Retire: &retireGroup{Store: store, Nodes: nodes}})
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.child == nil {
		return
	}
	select {
	case <-f.child.done:
	default:
		_, _ = f.child.stdin.Write(append(b, '\n')) // a child that went away misses nothing it needs
	}
}

// serveControl is a line the parent writes to a serving child besides row names: a JSON
// object (a row's name cannot start with '{': safeName in matrix.go).
type serveControl struct {
	Retire *retireGroup `json:"retire,omitempty"`
}

type retireGroup struct {
	Store string `json:"store"`
	Nodes int    `json:"nodes"`
}

// startChild starts `splitbrain matrix --serve` and reads its results as they come. Called
// with f.mu held.
func (f *FullBinary) startChild() (*serveChild, error) {
	args := []string{"matrix", "--file", f.MatrixFile, "--tags", f.Tier, "--store", f.StoreRoot,
		"--parallel", fmt.Sprint(max(f.Parallel, 1)), "--serve"}
	if f.FreshStore {
		args = append(args, "--fresh-stores")
	}
	// Not tied to a row's context: the child outlives each row; Close ends it.
	cmd := exec.Command(f.Path, args...)
	// A process group of its own: a Ctrl-C (the terminal signals the whole foreground group) or
	// a kill of make's group reaches only this process, which interrupts the child once. In
	// the group, the child got that signal and then this process's: the second one killed it
	// before it had torn down, and 44 containers of its Kubernetes, Consul and DynamoDB rows
	// were left running (2026-11-30, /work/runs/s35/mc5/run-3.log).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its candidates run the full binary too (the candidate image copies SPLITBRAIN_BINARY).
	cmd.Env = append(os.Environ(), images.EnvBinary+"="+f.Path)
	ch := &serveChild{cmd: cmd, waiting: map[string]chan resultRecord{}, done: make(chan struct{}), out: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = ch.out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s matrix --serve: %w", f.Path, err)
	}
	ch.stdin = stdin
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a result carries the run's outcome
		for sc.Scan() {
			var line serveLine
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				fmt.Fprintf(ch.out, "matrix --serve: unreadable line %q: %v\n", tail(sc.Text(), 200), err)
				continue
			}
			f.mu.Lock()
			if line.Result != nil {
				if got := ch.waiting[line.Result.Name]; got != nil {
					delete(ch.waiting, line.Result.Name)
					got <- *line.Result
				}
			}
			if line.Stats != nil {
				f.stats.Launched += line.Stats.Launched
				f.stats.Reused += line.Stats.Reused
				f.stats.Discarded += line.Stats.Discarded
				f.stats.Retired += line.Stats.Retired
			}
			f.mu.Unlock()
		}
		if err := sc.Err(); err != nil { // keep the pipe drained, or the child blocks on it
			fmt.Fprintf(ch.out, "matrix --serve: reading results: %v\n", err)
			_, _ = io.Copy(io.Discard, stdout)
		}
		ch.err = cmd.Wait()
		close(ch.done)
	}()
	return ch, nil
}

// Close ends the child matrix: no more rows (its stdin closes), so it finishes the rows it
// has, closes its store pool and exits; after two minutes it gets SIGINT, after two more
// SIGKILL. It returns the child's store pool figures.
func (f *FullBinary) Close() harness.PoolStats {
	f.mu.Lock()
	ch := f.child
	f.child = nil
	f.mu.Unlock()
	if ch != nil {
		ch.stdin.Close()
		for _, stop := range []func(){ch.interrupt, func() { _ = ch.cmd.Process.Kill() }} {
			select {
			case <-ch.done:
			case <-time.After(2 * time.Minute):
				stop()
			}
		}
		<-ch.done
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// serveLine is one line a serving child writes: a row's result, or, last, its pool's figures.
type serveLine struct {
	Result *resultRecord      `json:"result,omitempty"`
	Stats  *harness.PoolStats `json:"stats,omitempty"`
}

// Serve is the child side of FullBinary: it reads row names, one per line, from in, runs
// each at once with one store pool (the rows at once are the parent's to limit) and writes
// each result to out as a JSON line, then, when in ends and every row has, the pool's
// figures. progress gets each row's start and end.
func Serve(ctx context.Context, cases []Case, in io.Reader, out io.Writer, o Options) error {
	byName := make(map[string]Case, len(cases))
	for _, c := range cases {
		byName[c.Name] = c
	}
	pool := o.Pool
	if pool == nil && !o.NoReuse {
		pool = harness.NewStorePool()
		pool.MaxIdle = max(o.Parallel, 1)
		defer func() {
			if err := pool.Close(context.WithoutCancel(ctx)); err != nil && o.Progress != nil {
				fmt.Fprintf(o.Progress, "matrix --serve: store pool: %v\n", err)
			}
		}()
	}
	var mu sync.Mutex
	write := func(line serveLine) error {
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = out.Write(append(b, '\n'))
		return err
	}
	var wg sync.WaitGroup
	var errs []error
	failed := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	// Names are read apart from the loop below, so an interrupt ends it without waiting for
	// the parent to close the input.
	names := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		defer close(names)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case names <- strings.TrimSpace(sc.Text()):
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	for ctx.Err() == nil {
		var name string
		var ok bool
		select {
		case name, ok = <-names:
		case <-ctx.Done():
		}
		if !ok {
			break
		}
		if name == "" {
			continue
		}
		if strings.HasPrefix(name, "{") {
			var ctl serveControl
			if err := json.Unmarshal([]byte(name), &ctl); err != nil || ctl.Retire == nil {
				failed(fmt.Errorf("unreadable control line %q: want {\"retire\":{\"store\":...,\"nodes\":...}}", tail(name, 200)))
				continue
			}
			if n := pool.Retire(ctl.Retire.Store, ctl.Retire.Nodes); n > 0 && o.Progress != nil {
				fmt.Fprintf(o.Progress, "matrix --serve: %d idle %s cluster(s) retired: no row of that store left\n", n, ctl.Retire.Store)
			}
			continue
		}
		c, known := byName[name]
		if !known {
			err := fmt.Errorf("no row %q in this matrix and tier", name)
			failed(write(serveLine{Result: record(Result{Case: Case{Name: name}, Err: err, Diffs: []string{"not run: " + err.Error()}})}))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "matrix --serve: %s ...\n", c.Name)
			}
			r := RunCasePooled(ctx, c, o.StoreRoot, o.RunProgress, pool)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "matrix --serve: %s: %s in %v\n", c.Name, r.Observed.Verdict, r.Wall.Round(time.Second))
			}
			failed(write(serveLine{Result: record(r)}))
		}()
	}
	wg.Wait()
	select {
	case err := <-readErr:
		if err != nil {
			failed(fmt.Errorf("reading row names: %w", err))
		}
	default: // interrupted while reading
	}
	if pool != nil {
		st := pool.Stats()
		failed(write(serveLine{Stats: &st}))
	}
	return errors.Join(errs...)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
