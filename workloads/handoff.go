package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Handoff defaults. By default a handoff is paced by events: the leader is asked to hand
// off once it has proven its tenure with a few accepted writes, so the number of handoffs in
// a phase follows the recipe's own speed, not the machine's load. A period (HandoffEvery)
// puts them on a time table instead, for rows whose race needs that rhythm.
const (
	// HandoffWrites is the accepted write of a tenure (counted from its election) on which
	// its leader gets SIGTERM. More than checkers.DefaultGoalWrites, so a phase that ends
	// on "writes accepted after the last disruption" can end between two handoffs.
	HandoffWrites = 5
	handoffPause  = 1 * time.Second
	// exitGrace bounds a graceful exit after SIGTERM (the contract asks for a prompt one);
	// after it the workload sends SIGKILL so the schedule does not stall.
	exitGrace = 10 * time.Second
)

// handoff: SIGTERM the current leader (it resigns and exits) on its HandoffWrites-th
// accepted write, or every period, leave it down for the pause, then restart it. Each
// signal is a history event, so the checkers can measure SIGTERM → next election → first
// accepted write.
type handoff struct {
	every  time.Duration // 0: event-paced (on the leader's writes-th accepted write)
	writes int
	pause  time.Duration
	grace  time.Duration // SIGTERM → exit bound before SIGKILL
}

func newHandoff(o Options) (Workload, error) {
	h := &handoff{every: o.HandoffEvery, writes: HandoffWrites, pause: o.HandoffPause, grace: exitGrace}
	if h.pause == 0 {
		h.pause = handoffPause
	}
	if h.every < 0 || h.pause < 0 {
		return nil, fmt.Errorf("handoff: period %v and pause %v must not be negative", h.every, h.pause)
	}
	if h.every > 0 && h.every <= h.pause {
		return nil, fmt.Errorf("handoff: the period (%v) must be longer than the pause (%v), or the resigned leader never comes back before the next handoff", h.every, h.pause)
	}
	return h, nil
}

func (h *handoff) Name() string { return "handoff" }

func (h *handoff) Describe() string {
	if h.every > 0 {
		return fmt.Sprintf("handoff: every %v SIGTERM the leader, restart it after %v", h.every, h.pause)
	}
	return fmt.Sprintf("handoff: SIGTERM each leader on its %s accepted write (counted from its election), restart it after %v", ordinal(h.writes), h.pause)
}

func (h *handoff) Run(ctx context.Context, env Env) error {
	var tick <-chan time.Time
	if h.every > 0 {
		t := time.NewTicker(h.every)
		defer t.Stop()
		tick = t.C
	}
	var errs []error
	for {
		node, token, ok := h.next(ctx, env, tick)
		if ctx.Err() != nil { // the tick and the end of the phase can arrive together
			return errors.Join(errs...)
		}
		if !ok {
			env.Logf("handoff: no leader to hand off from; skipping this round")
			continue
		}
		env.Logf("handoff: SIGTERM to leader %s (token %d)", node, token)
		if err := h.handOff(ctx, env, node); err != nil {
			errs = append(errs, err)
			env.Logf("handoff: %v", err)
		}
	}
}

// next waits for the next leader to hand off from: the next tick's leader on a time table,
// otherwise the first leader with h.writes accepted writes in its tenure.
func (h *handoff) next(ctx context.Context, env Env, tick <-chan time.Time) (string, int64, bool) {
	if tick == nil {
		node, token, err := env.WaitLeaderWrites(ctx, h.writes)
		return node, token, err == nil
	}
	select {
	case <-ctx.Done():
		return "", 0, false
	case <-tick:
	}
	return env.Leader()
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}

// handOff stops node gracefully and restarts it. The restart happens even when ctx ends
// during the pause (on a context that survives it), so a handoff never leaves a node down.
func (h *handoff) handOff(ctx context.Context, env Env, node string) error {
	if err := env.Signal(ctx, node, "SIGTERM", "handoff"); err != nil {
		return fmt.Errorf("SIGTERM %s: %w", node, err)
	}
	wctx, cancel := context.WithTimeout(ctx, h.grace)
	err := env.WaitExit(wctx, node)
	cancel()
	if err != nil && ctx.Err() == nil {
		// The contract asks for a prompt exit on SIGTERM; this candidate did not.
		env.Logf("handoff: %s did not exit within %v of SIGTERM; sending SIGKILL", node, h.grace)
		if kerr := env.Signal(ctx, node, "SIGKILL", "handoff"); kerr != nil {
			return fmt.Errorf("SIGKILL %s after SIGTERM was ignored: %w", node, kerr)
		}
		kctx, kcancel := context.WithTimeout(ctx, h.grace)
		err = env.WaitExit(kctx, node)
		kcancel()
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s did not exit after SIGTERM and SIGKILL: %w", node, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(h.pause):
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	if err := env.Restart(rctx, node); err != nil {
		return fmt.Errorf("restart %s after handoff: %w", node, err)
	}
	return nil
}
