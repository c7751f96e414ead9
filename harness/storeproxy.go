package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// storeProxyName is the fault proxy's name on the run network.
const storeProxyName = "store-proxy"

// startStoreProxy starts the TCP fault proxy (the splitbrain binary's faultproxy, Toxiproxy
// as a library) when the plan has a fault that acts through it, and creates one link per
// candidate and store endpoint; candidateSpec then gives each candidate its links instead
// of the store's endpoints. Runs without such a fault keep direct connections.
func (r *run) startStoreProxy(ctx context.Context) error {
	if !r.plan.NeedsStoreProxy() || r.cluster.storeCluster() == nil {
		return nil
	}
	step := time.Now()
	n, err := r.eng.Start(ctx, r.runID, r.cluster.network(), platform.NodeSpec{
		Name:         storeProxyName,
		Role:         "store-proxy",
		Image:        r.imgs[images.RoleCandidate],
		Cmd:          []string{"faultproxy", "--api", ":" + faultproxy.APIPort},
		ExposedPorts: []string{faultproxy.APIPort + "/tcp"},
		Wait:         wait.ForHTTP("/version").WithPort(faultproxy.APIPort + "/tcp").WithStartupTimeout(30 * time.Second),
		LogDir:       r.log.logDir(),
	})
	if n != nil {
		r.storeProxy = n // teardown removes it, also after a failure below
	}
	if err != nil {
		return fmt.Errorf("store fault proxy: %w", err)
	}
	api, err := n.Endpoint(ctx, faultproxy.APIPort)
	if err != nil {
		return fmt.Errorf("store fault proxy: %w", err)
	}
	px, err := faultproxy.Setup(ctx, faultproxy.NewClient(api), storeProxyName, "0.0.0.0", faultproxy.FirstLinkPort,
		r.candidateNames(), r.cluster.storeCluster().Endpoints())
	if err != nil {
		return fmt.Errorf("store fault proxy links: %w", err)
	}
	r.proxy = px
	r.log.logf("store fault proxy ready in %v: candidates reach %s through %s (c1: %v)", time.Since(step).Round(time.Millisecond),
		r.cfg.Store, storeProxyName, px.Endpoints(candidateName(1)))
	return nil
}
