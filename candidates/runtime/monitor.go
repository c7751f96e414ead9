package runtime

import (
	"context"
	"time"
)

// Monitor runs check every period on its own goroutine, for a term's renew/still-held loop.
// The first error check returns ends the loop and becomes context.Cause(lost). stop ends the
// loop and waits for it, so a recipe can resign without a check racing it; a check that fails
// because stop cancelled its ctx does not cancel lost (the term ended by resigning, not by
// loss). stop is idempotent.
func Monitor(period time.Duration, check func(ctx context.Context) error) (lost context.Context, stop func()) {
	lost, lose := context.WithCancelCause(context.Background())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-mctx.Done():
				return
			case <-tick.C:
			}
			err := check(mctx)
			if mctx.Err() != nil {
				return
			}
			if err != nil {
				lose(err)
				return
			}
		}
	}()
	return lost, func() {
		cancel()
		<-done
	}
}
