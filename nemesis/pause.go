package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// pause: SIGSTOP every process of the target container (PID 1 and its descendants, found
// by host PID in the host's /proc), SIGCONT at the end. The processes cannot tell (no
// handler runs for SIGSTOP) and the kernel keeps their TCP connections open, which is the
// "long GC pause" that outlives a lease. Docker still reports the container as running, so
// the nemesis tracks what it stopped and verifies the state (T) itself.
type pauseKind struct{}

func (pauseKind) def() kindDef {
	return kindDef{Traits: Traits{
		Name:          "pause",
		Summary:       "SIGSTOP the processes of a node (a GC pause; process= stops the application or its sidecar alone), SIGCONT after for=",
		DefaultTarget: TargetLeader,
		DefaultFor:    "2xTTL",
		Classes:       []NodeClass{ClassCandidate, ClassStore},
		Colour:        "#e3a008",
		Started:       "paused",
		Healed:        "resumed",
		Silences:      true,
	}, params: []paramDef{
		{key: "process", def: ProcessAll, check: oneOf(ProcessAll, ProcessApp, ProcessSidecar),
			doc: "which processes of the node: all (PID 1 and its descendants), app (PID 1 alone), sidecar (the processes whose argv[0] is sidecar, e.g. the k8s-sidecar recipe's leader-election sidecar, with their descendants)"},
	}}
}

func (pauseKind) apply(ctx context.Context, s *signals, pf PlannedFault) (*applied, error) {
	names, err := s.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	key := "fault-" + strconv.Itoa(pf.ID)
	// Every target is signalled before any state is awaited, and the fault begins when the
	// last SIGSTOP is sent: from then on the signal is pending on every thread (sigstop), and none
	// returns to user space without stopping, so nothing of the target runs; state T shows
	// when the scheduler gets to the task: milliseconds, but seconds at load 40, where a start
	// stamped after that wait put 3.7 s between a trigger and its pause.
	held := map[string][]proc{}
	signalled, err := forEachTarget(names, func(name string) error {
		nd, err := s.node(name)
		if err != nil {
			return err
		}
		pid, err := nd.HostPID(ctx)
		if err != nil {
			return fmt.Errorf("host pid: %w", err)
		}
		held[name], err = s.stopAndHold(key, pid, pf.Params["process"])
		return err
	})
	var sentT int64
	if len(signalled) > 0 {
		sentT = history.Now()
	}
	for _, name := range signalled {
		if err != nil {
			break
		}
		if werr := waitState(held[name], 'T', false, signalTakesEffect); werr != nil {
			err = fmt.Errorf("%s: %w", name, werr)
		}
	}
	var all []proc
	for _, name := range signalled {
		all = append(all, held[name]...)
	}
	exits := watchExits(all)
	var resumedT atomic.Int64
	heal := func(context.Context) error {
		exits.stop()
		t, err := s.release(key)
		resumedT.Store(t)
		return err
	}
	// The pause ends the moment before the first SIGCONT, so nothing ran inside it.
	ended := func() int64 { return resumedT.Load() }
	return &applied{targets: names, heal: heal, beganT: sentT, endedT: ended,
		gone: exits.done(), goneWhy: "every paused process exited (the node was killed or powered off while stopped): nothing was left to hold"}, err
}
