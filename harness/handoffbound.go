package harness

import (
	"errors"
	"fmt"
	"time"
)

// HandoffBoundFor is the graceful-handoff bound of a run of cfg (SIGTERM of the leader →
// the next election): the recipe's, at cfg's TTL and intervals. An external candidate
// declares none. The matrix derives its handoff rows' bounds from it.
func HandoffBoundFor(cfg Config) (time.Duration, error) {
	c := cfg
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if c.Recipe == "" {
		return 0, errors.New("an external candidate declares no handoff bound: give a figure")
	}
	r, err := lookupRecipe(c.Recipe, c.Store, &c)
	if err != nil {
		return 0, err
	}
	if r.Timing.HandoffBound <= 0 {
		return 0, fmt.Errorf("recipe %s declares no handoff bound: give a figure", c.Recipe)
	}
	return r.Timing.HandoffBound, nil
}
