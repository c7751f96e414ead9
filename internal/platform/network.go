package platform

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// EnvSubnetPool overrides the pool run networks take their /24 from.
const EnvSubnetPool = "SPLITBRAIN_SUBNET_POOL"

// DefaultSubnetPool is inside 198.18.0.0/15 (RFC 2544 benchmarking space, never routed) but
// apart from dockerd's own default pool 198.18.0.0/16.
const DefaultSubnetPool = "198.19.0.0/16"

// allowedSpace is where run networks may live: traffic there can never leave the machine.
var allowedSpace = netip.MustParsePrefix("198.18.0.0/15")

// Network is a run's user bridge network; containers on it resolve each other by alias.
type Network struct {
	ID     string
	Name   string
	RunID  string
	Subnet netip.Prefix
	eng    *Engine

	mu    sync.Mutex
	fixed map[netip.Addr]bool // fixed addresses held by live nodes (nextAddr, releaseAddr)
}

// Fixed addresses: each node gets one from the lower half of the run's /24 when it is
// created and keeps it across restarts, as a machine keeps its address when it reboots (a
// restart at another address escaped every rule that named the old one). The engine hands
// out addresses of its own only from the upper half (the network's IP range), so the two
// never meet. A removed node's address is free again (an assessment's pooled store network
// outlives many runs' candidates).
func (n *Network) nextAddr() (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	dyn := dynamicRange(n.Subnet)
	if !n.Subnet.IsValid() || !dyn.IsValid() {
		return netip.Addr{}, false
	}
	if n.fixed == nil {
		n.fixed = map[netip.Addr]bool{}
	}
	for a := n.Subnet.Addr().Next().Next(); n.Subnet.Contains(a) && !dyn.Contains(a); a = a.Next() { // .1 is the gateway
		if !n.fixed[a] {
			n.fixed[a] = true
			return a, true
		}
	}
	return netip.Addr{}, false // the lower half is in use: the engine assigns one
}

// releaseAddr frees a fixed address once its node is removed.
func (n *Network) releaseAddr(a netip.Addr) {
	if n == nil || !a.IsValid() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.fixed, a)
}

// dynamicRange is the upper half of a subnet, where the engine picks addresses itself.
func dynamicRange(subnet netip.Prefix) netip.Prefix {
	if subnet.Bits() >= 30 {
		return netip.Prefix{}
	}
	half := netip.PrefixFrom(subnet.Addr(), subnet.Bits()+1).Masked()
	// The upper half starts where the lower half ends.
	a := half.Addr().As4()
	hostBits := 32 - half.Bits()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += 1 << hostBits
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), half.Bits())
}

// ParseSubnetPool validates a pool: an IPv4 CIDR inside 198.18.0.0/15 with room for a /24.
func ParseSubnetPool(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet pool %q is not a CIDR (%v): use e.g. %s", s, err, DefaultSubnetPool)
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 24 || !allowedSpace.Contains(p.Addr()) || p.Bits() < allowedSpace.Bits() {
		return netip.Prefix{}, fmt.Errorf("subnet pool %q must be an IPv4 CIDR of /15../24 inside %s (benchmarking space, never routed): use e.g. %s", s, allowedSpace, DefaultSubnetPool)
	}
	return p, nil
}

// subnetPool reads the pool from the environment.
func subnetPool() (netip.Prefix, error) {
	if s, ok := os.LookupEnv(EnvSubnetPool); ok && s != "" {
		p, err := ParseSubnetPool(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%s: %w", EnvSubnetPool, err)
		}
		return p, nil
	}
	return netip.MustParsePrefix(DefaultSubnetPool), nil
}

// subnets24 lists the /24s of pool in order.
func subnets24(pool netip.Prefix) []netip.Prefix {
	n := 1 << (24 - pool.Bits())
	out := make([]netip.Prefix, 0, n)
	base := pool.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8
	for i := 0; i < n; i++ {
		v := start + uint32(i)<<8
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24))
	}
	return out
}

// ChooseSubnet picks a /24 of pool that overlaps none of used, starting at offset (mod the
// pool size) so concurrent runs tend to try different subnets first.
func ChooseSubnet(pool netip.Prefix, used []netip.Prefix, offset int) (netip.Prefix, error) {
	cands := subnets24(pool)
	for i := range cands {
		c := cands[(offset+i)%len(cands)]
		free := true
		for _, u := range used {
			if u.Overlaps(c) {
				free = false
				break
			}
		}
		if free {
			return c, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /24 left in subnet pool %s (%d networks in use): run `splitbrain clean` to remove leftovers or set %s to a larger pool inside %s", pool, len(used), EnvSubnetPool, allowedSpace)
}

// usedSubnets lists every subnet of every existing Docker network.
func usedSubnets(ctx context.Context, e *Engine) ([]netip.Prefix, error) {
	res, err := e.cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var used []netip.Prefix
	for _, n := range res.Items {
		for _, c := range n.IPAM.Config {
			if c.Subnet.IsValid() {
				used = append(used, c.Subnet)
			}
		}
	}
	return used, nil
}

// newNetwork is Engine.NewNetwork's work.
func newNetwork(ctx context.Context, e *Engine, runID string) (*Network, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	pool, err := subnetPool()
	if err != nil {
		return nil, err
	}
	name := "splitbrain-" + runID
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		used, err := usedSubnets(ctx, e)
		if err != nil {
			return nil, err
		}
		subnet, err := ChooseSubnet(pool, used, rand.IntN(1<<(24-pool.Bits())))
		if err != nil {
			return nil, err
		}
		gw := subnet.Addr().Next() // Network.Gateway
		// The create is not cancelled with ctx, as a container's is not (Engine.Start): the
		// engine finished a create whose caller had given up (SIGINT during a matrix), and
		// nobody knew the network to remove it. Once it has answered, a cancelled ctx
		// removes what it made.
		cctx, cancel := cleanupContext(ctx)
		res, err := e.cli.NetworkCreate(cctx, name, client.NetworkCreateOptions{
			Driver: "bridge",
			IPAM:   &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gw, IPRange: dynamicRange(subnet)}}},
			Labels: Labels(runID, "network", ""),
		})
		cancel()
		if err == nil && ctx.Err() != nil {
			rctx, cancel := cleanupContext(ctx)
			rerr := removeNetwork(rctx, e.cli, res.ID)
			cancel()
			return nil, errors.Join(fmt.Errorf("create network %s: %w", name, context.Cause(ctx)), rerr)
		}
		if err == nil {
			return &Network{ID: res.ID, Name: name, RunID: runID, Subnet: subnet, eng: e}, nil
		}
		lastErr = err
		if !isOverlapError(err) {
			return nil, fmt.Errorf("create network %s on %s: %w", name, subnet, err)
		}
	}
	return nil, fmt.Errorf("create network %s: every subnet tried was taken concurrently: %w", name, lastErr)
}

func isOverlapError(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "overlap")
}

// Remove deletes the network; containers must be gone first. Works on a cancelled ctx.
func (n *Network) Remove(ctx context.Context) error {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := removeNetwork(cctx, n.eng.cli, n.ID); err != nil {
		return fmt.Errorf("remove network %s: %w", n.Name, err)
	}
	return nil
}

// removeNetwork removes a network whose containers are gone. The engine detaches a removed
// container's endpoint after the removal returns, so "has active endpoints" right after a
// teardown means "not yet": the removal is retried until the endpoints are gone or ctx ends
// (a TestMatrix pool close once failed on it). A missing network is no error.
func removeNetwork(ctx context.Context, cli *client.Client, id string) error {
	// The detach takes milliseconds; an endpoint still there after 10 s is stale in the
	// engine, so waiting longer only delays the error.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var last error // the last "has active endpoints"
	for {
		_, err := cli.NetworkRemove(rctx, id, client.NetworkRemoveOptions{})
		if err == nil || isNotFound(err) {
			return nil
		}
		if rctx.Err() != nil && last != nil {
			// The retries ran out during a call (a loaded engine answered slowly, make test
			// beside a make chaos): the answer to report is the endpoints one.
			return staleEndpoints(ctx, cli, id, last)
		}
		if !isActiveEndpoints(err) {
			return err
		}
		last = err
		select {
		case <-rctx.Done():
			return staleEndpoints(ctx, cli, id, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isActiveEndpoints(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "active endpoints")
}

// staleEndpoints handles a network the engine will not remove although its containers are
// gone: endpoints the engine kept for containers that no longer exist (Docker 20.10.24, twice
// in a default tier; moby/moby#17217, #33156). A forced disconnect by the endpoint's name
// clears them on some engine versions, so it is tried once; when the network still stays, the
// error names the stale endpoints and the one remedy seen to work, an engine restart.
func staleEndpoints(ctx context.Context, cli *client.Client, id string, removeErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	res, err := cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return removeErr
	}
	var stale []string
	for cid, ep := range res.Network.Containers {
		if _, err := cli.ContainerInspect(ctx, cid, client.ContainerInspectOptions{}); err == nil || !isNotFound(err) {
			continue // a container still attached: not the engine's fault
		}
		stale = append(stale, ep.Name)
		_, _ = cli.NetworkDisconnect(ctx, id, client.NetworkDisconnectOptions{Container: ep.Name, Force: true})
	}
	if len(stale) == 0 && len(res.Network.Containers) > 0 {
		return removeErr // live containers hold it
	}
	if len(stale) == 0 {
		// Nothing attached, yet the engine counts endpoints (seen 2026-11-29): nothing to
		// disconnect either.
		return fmt.Errorf("%w: no container is attached, yet the engine counts endpoints on it (a Docker engine defect: moby/moby#17217); restarting the engine removes them: stop dockerd when nothing else uses it, run scripts/ensure-docker.sh, then splitbrain clean --all", removeErr)
	}
	_, err = cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	if err == nil || isNotFound(err) {
		return nil
	}
	slices.Sort(stale)
	return fmt.Errorf("%w: the engine keeps endpoint(s) %s for containers that no longer exist, and a forced disconnect did not clear them (a Docker engine defect: moby/moby#17217); restarting the engine removes them: stop dockerd when nothing else uses it, run scripts/ensure-docker.sh, then splitbrain clean --all", err, strings.Join(stale, ", "))
}

func isNotFound(err error) bool {
	var nf interface{ NotFound() }
	if errors.As(err, &nf) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such") || strings.Contains(s, "not found")
}

// Gateway is the network's gateway address: the bridge's address on the engine's host.
func (n *Network) Gateway() netip.Addr { return n.Subnet.Addr().Next() }

// HostHoldsGateway says whether this process shares the engine host's network namespace
// and so can serve the network's containers at Gateway(): the engine's bridge for the
// network (br-<first 12 of its id>) is one of this process's interfaces and holds the
// gateway. Not so for a remote engine, Docker Desktop's VM or a rootless engine; then why.
func (n *Network) HostHoldsGateway() (bool, string) {
	if len(n.ID) < 12 {
		return false, fmt.Sprintf("network id %q is too short to name its bridge", n.ID)
	}
	name := "br-" + n.ID[:12]
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return false, fmt.Sprintf("no interface %s here (the engine's bridges are not in this network namespace): %v", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return false, fmt.Sprintf("addresses of %s: %v", name, err)
	}
	gw := n.Gateway()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == gw {
			return true, ""
		}
	}
	return false, fmt.Sprintf("interface %s does not hold the gateway %s", name, gw)
}
