package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// clock: skew what a node believes the time is. Candidates read their clock, a wall line and
// a monotonic line, from their clock file (the candidate contract, contract.ClockSetting), so
// the nemesis rewrites that file; only what a candidate reads from it is skewed.
// PostgreSQL and ZooKeeper servers run under libfaketime with a timestamp file the nemesis
// rewrites at run time. Redis (jemalloc clashes with libfaketime) and etcd (Go ignores it)
// cannot be skewed, and the fault says so instead of pretending. The host clock is never
// touched.
type clockKind struct{}

func (clockKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "clock",
			Summary:       "skew a node's clock: bump by delta, strobe between +delta and 0 every period, or run it at rate× real time",
			DefaultTarget: TargetLeader,
			DefaultFor:    "2xTTL",
			Classes:       []NodeClass{ClassCandidate, ClassStore},
			Clock:         true,
			Colour:        "#0969da",
			Started:       "had its clock skewed",
			Healed:        "had its clock restored",
		},
		params: []paramDef{
			{"op", "bump (jump by delta for for=) | strobe (flip between +delta and 0 every period= for for=) | rate (run at rate× real time for for=; candidates only)", "bump", oneOf("bump", "strobe", "rate")},
			{"delta", "signed jump, Go duration or NxTTL, e.g. -3xTTL or +5s", "-3xTTL", checkDelta},
			{"period", "strobe flip period", "200ms", checkDur(false)},
			{"rate", "op=rate: how fast the clock runs, a number from 0.01 to 100 other than 1 (2 = twice real speed, 0.5 = half)", "", checkRate},
		},
	}
}

// Clock rates outside [minRate, maxRate] are refused: a candidate's clock arithmetic
// (offset + (rate-1)*elapsed) overflows for huge rates, and nothing real drifts that far.
const (
	minRate = 0.01
	maxRate = 100.0
)

func checkRate(v string) error {
	if strings.ContainsAny(v, "xX_pP") { // ParseFloat also takes hex floats and underscores
		return fmt.Errorf("write rate= as a decimal number, e.g. rate=2 or rate=0.25")
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || !(r > 0) || r == 1 || math.IsInf(r, 0) {
		return fmt.Errorf("want a number > 0 other than 1, e.g. rate=2 (twice real speed) or rate=0.5")
	}
	if r < minRate || r > maxRate {
		return fmt.Errorf("rate=%s: want a rate between %g and %g (other than 1)", v, minRate, maxRate)
	}
	return nil
}

func (clockKind) validate(f *FaultSpec) error {
	_, hasRate := f.Params["rate"]
	switch op := f.Params["op"]; {
	case op == "rate" && !hasRate:
		return fmt.Errorf("op=rate needs rate=, e.g. clock:op=rate,rate=2,target=leader,for=3xTTL")
	case op == "rate":
		for _, k := range []string{"delta", "period"} {
			if _, ok := f.Params[k]; ok {
				return fmt.Errorf("%s= does not apply to op=rate (the clock keeps its offset and changes speed); valid form: clock:op=rate,rate=2,target=leader,for=3xTTL", k)
			}
		}
	case hasRate:
		return fmt.Errorf("rate= applies only to op=rate, e.g. clock:op=rate,rate=2,target=leader,for=3xTTL")
	}
	return nil
}

func checkDelta(v string) error {
	d, err := ParseDur(v)
	if err != nil {
		return err
	}
	if d.D == 0 && d.TTLs == 0 {
		return fmt.Errorf("a zero delta changes nothing")
	}
	return nil
}

// FaketimeFile is where store nodes read their fake time offset (libfaketime
// FAKETIME_TIMESTAMP_FILE). The content is a relative offset in whole seconds, "+0" at start.
const FaketimeFile = "/splitbrain/faketime"

// FaketimeInitial is the content the launcher places in FaketimeFile before start.
const FaketimeInitial = "+0\n"

// FaketimeEnv is the environment a store launcher must give PostgreSQL and ZooKeeper
// containers so the clock fault can skew them (nil for stores that cannot be skewed). The
// JVM needs its monotonic clock left alone (it hangs or misbehaves otherwise).
func FaketimeEnv(storeKind string) map[string]string {
	if ok, _ := ClockSupported(storeKind); !ok {
		return nil
	}
	lib := "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
	if runtime.GOARCH == "arm64" {
		lib = "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"
	}
	env := map[string]string{
		"LD_PRELOAD":              lib,
		"FAKETIME_TIMESTAMP_FILE": FaketimeFile,
		"FAKETIME_NO_CACHE":       "1",
	}
	if storeKind == "zookeeper" {
		env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
		// The JVM reads the wall clock so often that re-reading the file on every call kept
		// a 3-node ensemble from becoming ready on a loaded machine; once a second is enough
		// for faults that last whole TTLs.
		delete(env, "FAKETIME_NO_CACHE")
		env["FAKETIME_CACHE_DURATION"] = "1"
		// Without it libfaketime 0.9.10 ends the JVM's monotonic timed waits early and its
		// threads spin (libraries.Image.FaketimeEnv says how).
		env["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
	}
	return env
}

// ClockSupported says whether a store kind's server clock can be skewed, and how or why not
// (the store's own definition in internal/storekinds says).
func ClockSupported(storeKind string) (bool, string) {
	st, ok := storekinds.Lookup(storeKind)
	if !ok {
		return false, "clock skew not supported for this node: unknown store kind " + strconv.Quote(storeKind)
	}
	if !st.ClockSkew {
		return false, "clock skew not supported for this node: " + st.ClockHow
	}
	return true, st.ClockHow
}

func (clockKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	for _, name := range pf.Chosen {
		if contains(p.topo.StoreNodes, name) {
			if ok, why := ClockSupported(p.topo.StoreKind); !ok {
				return fmt.Errorf("%s: %s", name, why)
			}
		}
	}
	if pf.Target == TargetStoreLeader {
		if ok, why := ClockSupported(p.topo.StoreKind); !ok {
			return fmt.Errorf("store-leader: %s", why)
		}
	}
	if pf.Params["op"] == "rate" {
		for _, name := range pf.Chosen {
			if contains(p.topo.StoreNodes, name) {
				return fmt.Errorf("%s: op=rate runs candidates' clocks only (store servers' libfaketime counts a rate from each process's start, so it cannot begin mid-run without a jump)", name)
			}
		}
	}
	if pf.Params["op"] == "strobe" {
		period, _ := time.ParseDuration(pf.Params["period"])
		if period <= 0 || period > time.Duration(pf.For) {
			return fmt.Errorf("strobe period=%s must be > 0 and not longer than for=%s", pf.Params["period"], pf.For)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (clockKind) apply(ctx context.Context, c *clocks, pf PlannedFault) (*applied, error) {
	if pf.Params["op"] == "rate" {
		return applyRate(ctx, c, pf)
	}
	delta, err := ParseDur(pf.Params["delta"])
	if err != nil {
		return nil, err
	}
	deltaD := delta.Resolve(time.Duration(c.topo.TTL))
	names, err := c.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !c.isCandidate(name) {
			if ok, why := ClockSupported(c.env.StoreKind()); !ok {
				return nil, fmt.Errorf("%s: %s", name, why)
			}
		}
	}
	// A candidate's bump steps both lines of its clock by delta and the heal steps them back
	// (contract.ClockSetting.Bumped), so a rate or another bump on the same node stays; a store
	// node's libfaketime offset is absolute: base + delta, then base.
	base := map[string]int64{}
	c.mu.Lock()
	for _, name := range names {
		base[name] = c.store[name]
	}
	c.mu.Unlock()
	var onMu sync.Mutex
	on := map[string]bool{} // the delta is in effect on this node (its write succeeded)
	set := func(ctx context.Context, skew bool, errPrefix string) error {
		return eachParallel(names, errPrefix, func(name string) error {
			if c.isCandidate(name) {
				onMu.Lock()
				cur := on[name]
				onMu.Unlock()
				if cur == skew {
					return nil
				}
				d := deltaD
				if !skew {
					d = -d
				}
				if err := c.changeCandidateClock(ctx, name, func(st contract.ClockSetting, _ int64) contract.ClockSetting { return st.Bumped(d) }); err != nil {
					return err
				}
			} else {
				off := base[name]
				if skew {
					off += int64(deltaD)
				}
				if err := c.setStoreClock(ctx, name, off); err != nil {
					return err
				}
			}
			onMu.Lock()
			on[name] = skew
			onMu.Unlock()
			return nil
		})
	}
	restore := func(ctx context.Context) error { return set(ctx, false, "restore clock of ") }
	if err := set(ctx, true, ""); err != nil {
		return &applied{targets: names, heal: restore}, err
	}
	for _, name := range names {
		if !c.isCandidate(name) {
			if err := c.verifyStoreClock(ctx, name, base[name]+int64(deltaD)); err != nil {
				return &applied{targets: names, heal: restore}, err
			}
		}
	}
	if pf.Params["op"] != "strobe" {
		return &applied{targets: names, heal: restore}, nil
	}
	period, _ := time.ParseDuration(pf.Params["period"])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var strobeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		skewed := true
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			skewed = !skewed
			if err := set(context.WithoutCancel(ctx), skewed, "strobe "); err != nil && strobeErr == nil {
				strobeErr = err
			}
		}
	}()
	heal := func(ctx context.Context) error {
		close(stop)
		wg.Wait()
		return errors.Join(strobeErr, restore(ctx))
	}
	return &applied{targets: names, heal: heal}, nil
}

// eachParallel runs fn for every name at once: one at a time, each candidate write a Docker
// copy and exec, three candidates took up to 2 s with three rows running, and a row that
// times a kill against the skew's end (redlock/clock-ahead-then-kill) lost its margin.
func eachParallel(names []string, errPrefix string, fn func(name string) error) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(name); err != nil {
				errs[i] = fmt.Errorf("%s%s: %w", errPrefix, name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// applyRate makes each target candidate's clock run at rate× real time from now on, both
// lines continuing from where they are. The heal steps the wall line back by the drift gained
// (as an NTP correction would) and leaves the monotonic line where it is, at real speed from
// then on (contract.ClockSetting.RateHealed): a monotonic clock never jumps.
func applyRate(ctx context.Context, c *clocks, pf PlannedFault) (*applied, error) {
	rate, err := strconv.ParseFloat(pf.Params["rate"], 64)
	if err != nil {
		return nil, fmt.Errorf("rate=%q: %w", pf.Params["rate"], err)
	}
	names, err := c.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !c.isCandidate(name) {
			return nil, fmt.Errorf("op=rate runs candidates' clocks only, %s is a store node", name)
		}
	}
	var mu sync.Mutex
	var done []string
	err = eachParallel(names, "", func(name string) error {
		err := c.changeCandidateClock(ctx, name, func(st contract.ClockSetting, now int64) contract.ClockSetting { return st.WithRate(rate, now) })
		if err == nil {
			mu.Lock()
			done = append(done, name)
			mu.Unlock()
		}
		return err
	})
	heal := func(ctx context.Context) error {
		return eachParallel(done, "restore clock of ", func(name string) error {
			return c.changeCandidateClock(ctx, name, func(st contract.ClockSetting, now int64) contract.ClockSetting { return st.RateHealed(now) })
		})
	}
	// A node whose write failed keeps its old file (the write is a rename); HealAll's sweep
	// resets every candidate whose file still carries a rate or a wall offset.
	return &applied{targets: names, heal: heal}, err
}
