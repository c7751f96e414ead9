package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/harness"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// TestUnlinkedRowFailsWhenTheFullBinaryCannotBeBuilt: a row the core cannot run fails by name
// with the build's reason; it is never left out or counted as run.
func TestUnlinkedRowFailsWhenTheFullBinaryCannotBeBuilt(t *testing.T) {
	full := StartFullBuild(context.Background(), "", t.TempDir()+"/splitbrain", &strings.Builder{})
	<-full.Ready()
	r := full.Run(context.Background(), Case{Name: "kubernetes/k8s-lease/none", Config: harness.Config{Store: storekinds.Kubernetes}})
	if r.Match() || r.Err == nil || !strings.Contains(r.Err.Error(), "no source tree") {
		t.Errorf("result %+v: want a failed row naming the missing source tree", r)
	}
}
