package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/faultproxy"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// storeProxyName is the fault proxy's name on the run network.
const storeProxyName = "store-proxy"

// startProxy starts the TCP fault proxy (the splitbrain binary's faultproxy, Toxiproxy
// as a library) when the plan has a fault that acts through it, and creates one link per
// candidate and store endpoint; the candidates stage then gives each candidate its links instead
// of the store's endpoints. Runs without such a fault keep direct connections.
func (f *faultEnv) startProxy(ctx context.Context, candidates []string) error {
	store := f.cluster.storeCluster()
	if !f.plan.NeedsStoreProxy() || store == nil {
		return nil
	}
	step := time.Now()
	n, err := f.eng.Start(ctx, f.runID, f.cluster.network(), platform.NodeSpec{
		Name:         storeProxyName,
		Role:         "store-proxy",
		Image:        f.imgs[images.RoleCandidate],
		Cmd:          []string{"faultproxy", "--api", ":" + faultproxy.APIPort},
		ExposedPorts: []string{faultproxy.APIPort + "/tcp"},
		Wait:         platform.WaitHTTP(faultproxy.APIPort, "/version", 30*time.Second),
		LogDir:       f.log.logDir(),
	})
	if n != nil {
		f.proxyNode = n // teardown removes it, also after a failure below
	}
	if err != nil {
		return fmt.Errorf("store fault proxy: %w", err)
	}
	api, err := n.Endpoint(ctx, faultproxy.APIPort)
	if err != nil {
		return fmt.Errorf("store fault proxy: %w", err)
	}
	px, err := faultproxy.Setup(ctx, faultproxy.NewClient(api), storeProxyName, "0.0.0.0", faultproxy.FirstLinkPort,
		candidates, store.Endpoints())
	if err != nil {
		return fmt.Errorf("store fault proxy links: %w", err)
	}
	f.proxy = px
	f.log.logf("store fault proxy ready in %v: candidates reach %s through %s (c1: %v)", time.Since(step).Round(time.Millisecond),
		f.store, storeProxyName, px.Endpoints(candidates[0]))
	return nil
}

// removeProxy removes the fault proxy's container, if it was started (teardown).
func (f *faultEnv) removeProxy(ctx context.Context) error {
	if f == nil || f.proxyNode == nil {
		return nil
	}
	return f.proxyNode.Terminate(ctx)
}
