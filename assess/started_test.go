package assess

import (
	"context"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// TestStartedNamesEachRunAndPool: Options.Started hears each run's id from harness.Run
// before it starts anything (here it fails at once: no engine), and the session's pool
// passes its clusters' ids the same way; splitbraintest logs them so a killed go test
// can be cleaned up.
func TestStartedNamesEachRunAndPool(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	var got [][2]string
	opts := Options{Store: "redis", Recipe: "redis-setnx", OutDir: t.TempDir(),
		Started: func(what, id string) { got = append(got, [2]string{what, id}) }}
	s, _, err := NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.r.pool.Started == nil {
		t.Fatal("the session's pool does not report its clusters' ids")
	}
	k, err := s.r.caseFor(Check{Name: "kill-leader", Fault: "kill-leader", Paced: true, Duration: time.Minute, Resource: ResourceUnfenced})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := harness.Run(context.Background(), k.Config)
	if len(got) != 1 || got[0][0] != "run" || got[0][1] == "" || (out != nil && out.RunID != got[0][1]) {
		t.Fatalf("started %v (outcome %+v), want the run's id once", got, out)
	}
}
