package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Handoff defaults: a handoff every few TTLs leaves the new leader time to settle and write.
const (
	handoffMinEvery = 2 * time.Second
	handoffEveryTTL = 3 // default period = 3 × TTL (at least handoffMinEvery)
	handoffPause    = 1 * time.Second
	// exitGrace bounds a graceful exit after SIGTERM (the contract asks for a prompt one);
	// after it the workload sends SIGKILL so the schedule does not stall.
	exitGrace = 10 * time.Second
)

// handoff: every period, SIGTERM the current leader (it resigns and exits), leave it down
// for the pause, then restart it. Each signal is a history event, so the checkers can
// measure SIGTERM → next election → first accepted write.
type handoff struct {
	every, pause time.Duration
	grace        time.Duration // SIGTERM → exit bound before SIGKILL
}

func newHandoff(o Options) (Workload, error) {
	h := &handoff{every: o.HandoffEvery, pause: o.HandoffPause, grace: exitGrace}
	if h.every == 0 {
		h.every = max(handoffMinEvery, handoffEveryTTL*o.TTL)
	}
	if h.pause == 0 {
		h.pause = handoffPause
	}
	if h.every < 0 || h.pause < 0 {
		return nil, fmt.Errorf("handoff: period %v and pause %v must not be negative", h.every, h.pause)
	}
	if h.every <= h.pause {
		return nil, fmt.Errorf("handoff: the period (%v) must be longer than the pause (%v), or the resigned leader never comes back before the next handoff", h.every, h.pause)
	}
	return h, nil
}

func (h *handoff) Name() string { return "handoff" }

func (h *handoff) Describe() string {
	return fmt.Sprintf("handoff: every %v SIGTERM the leader, restart it after %v", h.every, h.pause)
}

func (h *handoff) Run(ctx context.Context, env Env) error {
	t := time.NewTicker(h.every)
	defer t.Stop()
	var errs []error
	for {
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-t.C:
		}
		if ctx.Err() != nil { // the tick and the end of the phase can arrive together
			return errors.Join(errs...)
		}
		node, token, ok := env.Leader()
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
