package splitbraintest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/splitbraintest"
)

// A user's chaos test: build the module's candidate static and assess it on etcd. Each check
// is a subtest (TestElectionIsSafe/kill-leader, ...); -short runs the short battery.
// It needs a Docker engine, so it is compiled here, not run; examples/gotest-user holds it
// as a module of its own, and TestGotestUserModule runs that.
func ExampleAssess() {
	testElectionIsSafe := func(t *testing.T) {
		leaderd := splitbraintest.BuildGo(t, "./cmd/leaderd")
		sc := splitbraintest.Assess(t, splitbraintest.Candidate{Cmd: leaderd, Store: "etcd"},
			splitbraintest.Budget(8*time.Minute))
		t.Log(sc.Summary)
	}
	_ = testElectionIsSafe // func TestElectionIsSafe(t *testing.T) in the user's _test.go file
}

// The checks Assess runs for a Python candidate on Redis under -short, and in the full
// battery: these names are the subtests' names, for Checks or go test -run.
func ExamplePlan() {
	cand := splitbraintest.Candidate{Store: "redis", Cmd: "./leader.py", Packages: []string{"python3", "python3-redis"}}
	for _, short := range []bool{true, false} {
		checks, err := splitbraintest.Plan(cand, splitbraintest.Short(short))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("short %v:", short)
		for _, c := range checks {
			fmt.Print(" ", c.Name)
		}
		fmt.Println()
	}
	// Output:
	// short true: handoff pause-leader kill-leader
	// short false: handoff pause-leader kill-leader fault-free freeze-leader leader-cut-silent leader-cut-refused clock-bump clock-rate latency half-open reset store-outage follower-cut-then-kill waiter-killed explore
}
