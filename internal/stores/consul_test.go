//go:build !core

package stores

import (
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

func TestConsulCommand(t *testing.T) {
	cmd := strings.Join(ConsulCommand("consul-2", nodeNames("consul", 3)), " ")
	for _, want := range []string{
		"consul agent -server ", "-node=consul-2 ", "-bootstrap-expect=3 ", "-client=0.0.0.0 ",
		"-retry-join=consul-1 -retry-join=consul-2 -retry-join=consul-3", "raft_multiplier = 1", `session_ttl_min = "1s"`,
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("consul command lacks %q: %s", want, cmd)
		}
	}
	if st, ok := storekinds.Lookup("consul"); !ok || !st.HasLeader || st.ClockSkew || !strings.Contains(st.ClockHow, "libfaketime") {
		t.Errorf("consul traits %+v: want a store leader and clock skew refused with the reason", st)
	}
}
