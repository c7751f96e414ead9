package platform

import (
	"errors"

	"golang.org/x/sync/errgroup"
)

// Each runs f(0)..f(n-1) concurrently, at most limit at once (limit <= 0: no limit), waits
// for all and returns every error joined. Unlike a plain errgroup it does not stop at the
// first error: a fan-out over nodes (start, readiness, removal, checks) must report each
// failing node and must not leave the others half done.
func Each(n, limit int, f func(i int) error) error {
	var g errgroup.Group
	if limit > 0 {
		g.SetLimit(limit)
	}
	errs := make([]error, n)
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	g.Wait()
	return errors.Join(errs...)
}
