package nemesis

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
)

// clocks is the mechanism of clocks: candidates' clock files (and the libfaketime files of
// library candidates) and store nodes' libfaketime offsets. It remembers what it last wrote
// to each, and its sweep sets every one back to real time.
func newClocks(l *live) *clocks { return &clocks{live: l} }

type clocks struct {
	*live
	mu    sync.Mutex
	store map[string]int64           // libfaketime offset (ns) per store node it skewed
	cands map[string]*candidateClock // what each candidate's clock file holds, once written
}

// ClockFiler is optionally implemented by an Env whose candidates read their clock-offset
// control from somewhere other than the default below.
type ClockFiler interface {
	CandidateClockFile() string
}

// defaultCandidateClockFile is where the candidate contract puts the clock-offset control.
const defaultCandidateClockFile = contract.ClockFilePath

func (c *clocks) candidateClockFile() string {
	if cf, ok := c.env.(ClockFiler); ok {
		if p := cf.CandidateClockFile(); p != "" {
			return p
		}
	}
	return defaultCandidateClockFile
}

// candidateClock is what the nemesis last wrote into one candidate's clock file; mu orders
// the changes, so two faults on one node never write out of order.
type candidateClock struct {
	mu sync.Mutex
	st contract.ClockSetting
}

func (c *clocks) candidateClockOf(name string) *candidateClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cands == nil {
		c.cands = map[string]*candidateClock{}
	}
	cc := c.cands[name]
	if cc == nil {
		cc = &candidateClock{}
		c.cands[name] = cc
	}
	return cc
}

// changeCandidateClock writes change(current setting, now) into the candidate's clock file;
// the nemesis's record changes only when the write succeeded (the write is a rename, so a
// failed one leaves the old file).
func (c *clocks) changeCandidateClock(ctx context.Context, name string, change func(st contract.ClockSetting, now int64) contract.ClockSetting) error {
	cc := c.candidateClockOf(name)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	now := time.Now().UnixNano()
	next := change(cc.st, now)
	ft := c.candidateFaketimeFile(name)
	if ft != "" && !next.RealSpeed() {
		return fmt.Errorf("%s runs a library under libfaketime, which counts a rate from the process's start: a rate cannot begin or end mid-run without a jump (use op=bump or op=strobe on library candidates)", name)
	}
	if err := c.writeCandidateClock(ctx, name, []byte(next.String()+"\n")); err != nil {
		return err
	}
	if ft != "" {
		if err := writeHostFileAtomic(ft, []byte(FaketimeOffset(next.WallOffsetAt(now)))); err != nil {
			return err
		}
	}
	cc.st = next
	return nil
}

// CandidateFaketimeEnv is implemented by an Env some of whose candidates are unmodified
// programs (library recipes) that read no clock file: they run under libfaketime, whose
// timestamp file the nemesis writes beside the clock file with the wall line's offset.
type CandidateFaketimeEnv interface {
	// CandidateFaketimeHostFile is the host path of candidate's libfaketime file, "" when
	// the candidate does not run under libfaketime.
	CandidateFaketimeHostFile(candidate string) string
}

func (c *clocks) candidateFaketimeFile(name string) string {
	if fe, ok := c.env.(CandidateFaketimeEnv); ok {
		return fe.CandidateFaketimeHostFile(name)
	}
	return ""
}

// FaketimeOffset renders a wall offset as libfaketime's relative form in seconds, to the
// nanosecond ("+0.000000000", "-6.000000000").
func FaketimeOffset(d time.Duration) string {
	return fmt.Sprintf("%+.9f\n", d.Seconds())
}

// CandidateClockHostEnv is implemented by an Env whose candidates read their clock file from
// a host directory bind-mounted read-only into their containers: the nemesis writes it there
// (a temporary file renamed over the old one), with no Docker call.
type CandidateClockHostEnv interface {
	// CandidateClockHostFile is the host path of candidate's clock file, "" when it has none
	// (then the nemesis copies the file into the container).
	CandidateClockHostFile(candidate string) string
}

func (c *clocks) writeCandidateClock(ctx context.Context, name string, content []byte) error {
	if he, ok := c.env.(CandidateClockHostEnv); ok {
		if p := he.CandidateClockHostFile(name); p != "" {
			return writeHostFileAtomic(p, content)
		}
	}
	nd, err := c.node(name)
	if err != nil {
		return err
	}
	return writeFileAtomic(ctx, nd, c.candidateClockFile(), content)
}

// setStoreClock writes a store node's libfaketime file (whole seconds).
func (c *clocks) setStoreClock(ctx context.Context, name string, offset int64) error {
	nd, err := c.node(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.store == nil {
		c.store = map[string]int64{}
	}
	c.store[name] = offset
	c.mu.Unlock()
	v, err := faketimeValue(offset)
	if err != nil {
		return err
	}
	return nd.CopyFile(ctx, FaketimeFile, []byte(v), 0o644)
}

// sweep: store nodes back to offset 0; candidates' wall lines back
// to real time at real speed, their monotonic lines left where they are (they never jump).
func (c *clocks) sweep(ctx context.Context) []error {
	c.mu.Lock()
	var stores, cands []string
	for name, off := range c.store {
		if off != 0 {
			stores = append(stores, name)
		}
	}
	for name := range c.cands {
		cands = append(cands, name)
	}
	c.mu.Unlock()
	var errs []error
	for _, name := range stores {
		if err := c.setStoreClock(ctx, name, 0); err != nil {
			errs = append(errs, fmt.Errorf("reset clock of %s: %w", name, err))
		}
	}
	for _, name := range cands {
		cc := c.candidateClockOf(name)
		cc.mu.Lock()
		st := cc.st
		cc.mu.Unlock()
		if st.Offset == 0 && (st.Rate == 0 || st.Rate == 1) {
			continue
		}
		if err := c.changeCandidateClock(ctx, name, func(st contract.ClockSetting, now int64) contract.ClockSetting { return st.WallReset(now) }); err != nil {
			errs = append(errs, fmt.Errorf("reset clock of %s: %w", name, err))
		}
	}
	return errs
}

// faketimeValue renders an offset for libfaketime: "+N" / "-N" whole seconds.
func faketimeValue(offset int64) (string, error) {
	secs := int64(math.Round(float64(offset) / 1e9))
	if secs == 0 && offset != 0 {
		return "", fmt.Errorf("store clock offsets have 1 s resolution (libfaketime file), %s rounds to 0", time.Duration(offset))
	}
	return fmt.Sprintf("%+d\n", secs), nil
}

// verifyStoreClock reads `date +%s` inside the store node (exec inherits the container's
// LD_PRELOAD) and checks the skew took effect.
func (c *clocks) verifyStoreClock(ctx context.Context, name string, offset int64) error {
	nd, err := c.node(name)
	if err != nil {
		return err
	}
	code, out, err := nd.Exec(ctx, []string{"date", "+%s"})
	if err != nil || code != 0 {
		return fmt.Errorf("%s: read its clock with date: exit %d, %v", name, code, err)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(lastLine(out)), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: date printed %q", name, out)
	}
	want := time.Now().Add(time.Duration(offset)).Unix()
	if d := got - want; d < -2 || d > 2 {
		return fmt.Errorf("%s: clock is %ds off the intended skew: libfaketime is not active; the store launcher must set %s and place %s", name, d, envList(FaketimeEnv(c.env.StoreKind())), FaketimeFile)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func envList(env map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(env) {
		parts = append(parts, k+"="+env[k])
	}
	return strings.Join(parts, " ")
}
