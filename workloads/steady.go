package workloads

import "context"

// steady: leaders write every write interval by themselves (the writing is in the
// candidates); the harness does nothing but watch.
type steady struct{}

func newSteady(Options) (Workload, error) { return steady{}, nil }

func (steady) Name() string { return "steady" }
func (steady) Describe() string {
	return "steady: leaders write every write interval; no harness action"
}

func (steady) Run(ctx context.Context, _ Env) error {
	<-ctx.Done()
	return nil
}
