package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/fence"
)

// FenceMode is how a fence fault changes the run's fence device (internal/fence).
type FenceMode = fence.Mode

const (
	FenceUnreachable = fence.Unreachable
	FenceSlow        = fence.Slow
	FenceLying       = fence.Lying
)

// FenceDevice is the run's fence device as the fence fault kinds change it. An Env that
// has one implements FenceEnv.
type FenceDevice interface {
	// SetFault puts fault id on the device. The heal it returns takes it off and returns
	// once the fault's after-effects are over (requests it held answered, power-offs it
	// promised done; dropped when ctx ends first), so fault-end follows the last of them.
	SetFault(id int, mode FenceMode, delay time.Duration) (heal func(ctx context.Context) error, err error)
}

// FenceEnv is implemented by an Env whose run has a fence device.
type FenceEnv interface {
	FenceDevice() FenceDevice
}

// fenceKindTargets: a fence fault acts on the one device, which powers every candidate.
var fenceKindTargets = []string{TargetAllCandidates}

// fenceFaults is the mechanism of the run's fence device (STONITH): the faults it set on
// the device, by fault id, so its sweep clears any whose own heal did not run.
type fenceFaults struct {
	*live
	mu     sync.Mutex
	clears map[int]func(ctx context.Context) error
}

func newFenceFaults(l *live) *fenceFaults { return &fenceFaults{live: l} }

// set puts the device in mode for the fault (delayKey names the param with its delay, ""
// for none) and returns the heal that puts it back.
func (ff *fenceFaults) set(ctx context.Context, pf PlannedFault, mode FenceMode, delayKey string) (*applied, error) {
	var delay time.Duration
	if delayKey != "" {
		d, err := time.ParseDuration(pf.Params[delayKey])
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: want a duration > 0", delayKey, pf.Params[delayKey])
		}
		delay = d
	}
	fe, ok := ff.env.(FenceEnv)
	var dev FenceDevice
	if ok {
		dev = fe.FenceDevice()
	}
	if dev == nil {
		return nil, fmt.Errorf("this run has no fence device (SPLITBRAIN_FENCE_URL): the harness could not open one on the run network")
	}
	names, err := ff.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	clear, err := dev.SetFault(pf.ID, mode, delay)
	if err != nil {
		return nil, err
	}
	ff.mu.Lock()
	if ff.clears == nil {
		ff.clears = map[int]func(ctx context.Context) error{}
	}
	ff.clears[pf.ID] = clear
	ff.mu.Unlock()
	heal := func(ctx context.Context) error {
		if err := clear(ctx); err != nil {
			return err
		}
		ff.mu.Lock()
		delete(ff.clears, pf.ID)
		ff.mu.Unlock()
		return nil
	}
	return &applied{targets: names, heal: heal}, nil
}

// sweep clears the device's faults whose heal failed or never ran.
func (ff *fenceFaults) sweep(ctx context.Context) []error {
	ff.mu.Lock()
	left := ff.clears
	ff.clears = nil
	ff.mu.Unlock()
	var errs []error
	for _, id := range sortedKeys(left) {
		if err := left[id](ctx); err != nil {
			errs = append(errs, fmt.Errorf("clear fault %d of the fence device: %w", id, err))
		}
	}
	return errs
}
