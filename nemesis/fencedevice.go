package nemesis

import (
	"context"
	"fmt"
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

// applyFenceFault puts one fence fault on the run's device; its targets are the
// candidates whose power the device switches.
func applyFenceFault(ctx context.Context, n *Nemesis, pf PlannedFault, mode FenceMode, delayKey string) (*applied, error) {
	var delay time.Duration
	if delayKey != "" {
		d, err := time.ParseDuration(pf.Params[delayKey])
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: want a duration > 0", delayKey, pf.Params[delayKey])
		}
		delay = d
	}
	fe, ok := n.env.(FenceEnv)
	var dev FenceDevice
	if ok {
		dev = fe.FenceDevice()
	}
	if dev == nil {
		return nil, fmt.Errorf("this run has no fence device (SPLITBRAIN_FENCE_URL): the harness could not open one on the run network")
	}
	names, err := n.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	heal, err := dev.SetFault(pf.ID, mode, delay)
	if err != nil {
		return nil, err
	}
	return &applied{targets: names, heal: heal}, nil
}
