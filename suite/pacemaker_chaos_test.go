//go:build chaos

package suite

import (
	"testing"
	"time"
)

// TestPacemakerFencing runs two of the matrix's Pacemaker rows on real containers (Corosync,
// Pacemaker, fence_docker against the run's fence device): a valid one (the cut-off leader is
// fenced before the leader starts elsewhere) and an invalid one (the same cut with
// stonith-enabled=false). Their expectations are the matrix's, as measured; an unknown
// verdict or a harness error fails.
//
//	go test -tags chaos -run TestPacemakerFencing ./suite/
func TestPacemakerFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("Pacemaker rows run in the nightly tier; -short runs the smoke tier only")
	}
	m, err := Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"none/pacemaker-stonith/cut-leader/unfenced", "none/pacemaker-no-stonith/pause-leader/unfenced"} {
		cases, err := m.Select(TierNightly, "^"+name+"$")
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) != 1 {
			t.Fatalf("matrix row %s: %d cases, want 1", name, len(cases))
		}
		c := cases[0]
		t.Run(name, func(t *testing.T) {
			r := RunCase(t.Context(), c, StoreRoot(""), logWriter{t})
			if r.Err != nil {
				t.Fatalf("harness error: %v", r.Err)
			}
			if r.Outcome != nil {
				t.Logf("run dir %s: verdict %s, reasons %v, findings %v, failovers %v, wall %v", r.Outcome.RunDir,
					r.Observed.Verdict, r.Observed.Reasons, r.Observed.Findings, r.Observed.Failovers, r.Wall.Round(time.Second))
			}
			for _, d := range r.Diffs {
				t.Errorf("%s: %s (note: %s)", c.Name, d, c.Row.Note)
			}
		})
	}
}
