package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// Bounds of the shutdown on SIGTERM: resign, then close; the process exits within their sum
// (ShutdownBound, stated in docs/candidates.md).
const (
	resignTimeout = 1 * time.Second
	closeTimeout  = 1 * time.Second
	ShutdownBound = resignTimeout + closeTimeout
)

// errSIGTERM is the cause of a term ended by the process's own shutdown.
var errSIGTERM = errors.New(contract.ReasonSIGTERM)

// Options configure Run; zero values use the process's environment and stdio.
type Options struct {
	Recipes Registry                         // required: the recipes to choose from (candidates.Registry)
	Recipe  string                           // overrides SPLITBRAIN_RECIPE when set
	Lookup  func(string) (string, bool)      // default os.LookupEnv
	Stdout  io.Writer                        // events
	Stderr  io.Writer                        // log
	Client  *http.Client                     // default: derived from the write interval
	OnTerm  func(token int64)                // test hook: called after each elected event
	OnStep  func(token int64, reason string) // test hook: called after each stepped-down event
}

// ConfigError is a configuration Run cannot work with (environment, recipe, store mismatch).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Run is a candidate process: it campaigns, leads and writes until ctx ends (SIGTERM), then
// resigns and returns. It returns an error only for a configuration it cannot run with.
func Run(ctx context.Context, o Options) error {
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	cfg, err := contract.ParseEnv(o.Lookup)
	if err != nil {
		return &ConfigError{err}
	}
	if o.Recipe != "" {
		cfg.Recipe = o.Recipe
	}
	if cfg.Recipe == "" {
		return &ConfigError{fmt.Errorf("no recipe: set %s or --recipe (known: %v)", contract.EnvRecipe, o.Recipes.Names())}
	}
	def, err := o.Recipes.LookupFor(cfg.Recipe, cfg.Store)
	if err != nil {
		return &ConfigError{err}
	}
	spec := def.Describe()
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.Stderr, "%s %s: %s\n", time.Now().Format("15:04:05.000"), cfg.NodeID, fmt.Sprintf(format, args...))
	}
	em := NewEmitter(o.Stdout)
	env := Env{Config: cfg, Timing: def.TimingFor(cfg), Logf: logf, StepFn: em.Step,
		Clock: NewClock(cfg.ClockFile, func(err error) { em.Error(err.Error()) })}
	r := &runner{spec: spec, env: env, em: em, o: o, client: o.Client,
		idPrefix: cfg.NodeID + "-" + strconv.FormatInt(history.Now(), 36) + "-"}
	if r.client == nil {
		r.client = &http.Client{Timeout: WriteTimeout(cfg.WriteInterval),
			Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}
	}
	logf("recipe %s on %s %v, timing %+v", spec.Name, cfg.Store, cfg.Endpoints, env.Timing)

	rec, err := def.NewRecipe(ctx, env)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("recipe %s: %w", spec.Name, err)
	}
	r.rec = rec
	r.loop(ctx)
	r.shutdown()
	return nil
}

// WriteTimeout is the per-write HTTP timeout: short, so a leader notices an unreachable
// resource within a few intervals, but not below what a loaded host needs for a local call.
func WriteTimeout(interval time.Duration) time.Duration {
	return min(max(4*interval, 200*time.Millisecond), 2*time.Second)
}

type runner struct {
	spec     Info
	env      Env
	em       *Emitter
	o        Options
	rec      Recipe
	client   *http.Client
	idPrefix string
	writes   int64
}

func (r *runner) loop(ctx context.Context) {
	backoff := max(r.env.Timing.Retry, 100*time.Millisecond)
	for ctx.Err() == nil {
		r.em.Campaigning(r.spec.ClockAware)
		campaignT := history.Now()
		term, err := r.rec.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.em.Error("campaign: " + err.Error())
			r.resign()
			sleep(ctx, backoff)
			continue
		}
		if term.Token < 1 {
			r.em.Error(fmt.Sprintf("recipe bug: token %d < 1; resigning", term.Token))
			r.resign()
			sleep(ctx, backoff)
			continue
		}
		if term.CallT <= 0 || term.CallT < campaignT {
			term.CallT = campaignT // the winning acquire was sent during this Campaign call
		}
		r.em.Elected(term.Token, term.CallT)
		if r.o.OnTerm != nil {
			r.o.OnTerm(term.Token)
		}
		reason := r.lead(ctx, term)
		r.em.SteppedDown(reason)
		if r.o.OnStep != nil {
			r.o.OnStep(term.Token, reason)
		}
		if ctx.Err() != nil {
			return // shutdown resigns
		}
		r.resign()
	}
}

// lead writes every interval until the term is lost, fails its local check, is fenced out,
// or ctx ends. It returns the stepped-down reason. Belief ends when it returns.
func (r *runner) lead(ctx context.Context, term Term) string {
	wctx, cancel := context.WithCancelCause(term.Lost)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(errSIGTERM) })
	defer stop()
	tick := time.NewTicker(r.env.WriteInterval)
	defer tick.Stop()
	for {
		if ctx.Err() != nil {
			return contract.ReasonSIGTERM // whatever else a shutdown cancels, the cause is ours
		}
		if wctx.Err() != nil {
			return causeText(wctx)
		}
		if term.Valid != nil {
			if err := term.Valid(); err != nil {
				return err.Error()
			}
		}
		// The leader works on what it decided while it held the lease, then sends it. It does
		// not look at the lease again: a pause here is the zombie-leader case that only the
		// resource's fencing can stop. Only our own shutdown cancels the write.
		if r.env.LeaderWork > 0 {
			// The work gap opens now: a fault on=step:leader-work lands inside it when the gap
			// is longer than the trigger's reaction (nemesis.TriggerBound).
			r.em.Step(StepLeaderWork)
			select {
			case <-ctx.Done():
				return contract.ReasonSIGTERM
			case <-time.After(r.env.LeaderWork):
			}
		}
		if rejected, max := r.write(ctx, term.Token); rejected {
			return fmt.Sprintf("fenced: the resource rejected token %d (max %d)", term.Token, max)
		}
		select {
		case <-wctx.Done():
		case <-tick.C:
		}
	}
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "lost"
}

// write sends one write and reports it; it returns true when the resource refused the token.
func (r *runner) write(ctx context.Context, token int64) (rejected bool, max int64) {
	r.writes++
	id := r.idPrefix + strconv.FormatInt(r.writes, 10)
	body, _ := json.Marshal(map[string]any{"node": r.env.NodeID, "token": token, "write_id": id})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.env.ResourceURL+"/write", bytes.NewReader(body))
	if err != nil {
		r.em.Error("write request: " + err.Error())
		return false, 0
	}
	req.Header.Set("Content-Type", "application/json")
	callT := history.Now()
	resp, err := r.client.Do(req)
	result := history.ResultUnknown
	var answer struct {
		Max   int64  `json:"max"`
		Error string `json:"error"`
	}
	if err == nil {
		json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&answer)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			result = history.ResultAccepted
		case resp.StatusCode == http.StatusConflict && answer.Error == "":
			result = history.ResultRejected
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			// Our request was refused as malformed: it did not apply.
			result = history.ResultRejected
			r.em.Error(fmt.Sprintf("resource refused write %s: %d %s", id, resp.StatusCode, answer.Error))
		}
	}
	r.em.Write(token, id, callT, result)
	return result == history.ResultRejected && answer.Error == "", answer.Max
}

func (r *runner) resign() {
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	if err := r.rec.Resign(ctx); err != nil {
		r.env.Logf("resign: %v", err)
	}
}

func (r *runner) shutdown() {
	r.resign()
	done := make(chan error, 1)
	go func() { done <- r.rec.Close() }()
	select {
	case err := <-done:
		if err != nil {
			r.env.Logf("close: %v", err)
		}
	case <-time.After(closeTimeout):
		r.env.Logf("close: gave up after %s", closeTimeout)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
