package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// netCut is one active iptables fault (partition, loss): what it cuts and where its rules
// are, so a node that restarts into a fresh network namespace (a kill's restart, a fence's
// power-on) gets them back. A machine power-cycled behind a cut switch port stays cut; a
// container's rules die with its namespace.
type netCut struct {
	mu     sync.Mutex // serialises the heal and re-applications of this fault
	pf     PlannedFault
	g      Grudge
	action string
	prob   float64
	ips    map[string]string // node → the address its rules were written for
	placed map[string]bool   // nodes whose namespace got (or may have got) rules
	healed bool
	notes  []string // re-applications, for the fault-end record
	// bridges: per restarting node, the stand-in rules put on its peers (peer → rules)
	// from just before its start until its own rules are back.
	bridges map[string]map[string][]Rule
}

// bridgesFor are the stand-ins for node's rules: each edge node enforces is enforced on the
// other end too (node drops from P at its INPUT ⇔ P drops towards node at its OUTPUT).
func (c *netCut) bridgesFor(node string) map[string][]Rule {
	byIP := map[string]string{}
	for n, ip := range c.ips {
		byIP[ip] = n
	}
	out := map[string][]Rule{}
	for _, r := range c.rulesOn()[node] {
		peer := byIP[r.Peer]
		if peer == "" || peer == node {
			continue
		}
		out[peer] = append(out[peer], Rule{Inbound: !r.Inbound, Peer: c.ips[node], Action: r.Action, Prob: r.Prob, FaultID: r.FaultID, Bridge: true})
	}
	return out
}

// rulesOn is the cut's rules per node for the current addresses.
func (c *netCut) rulesOn() map[string][]Rule {
	out := map[string][]Rule{}
	for node, edges := range Place(c.g.Edges()) {
		for _, e := range edges {
			out[node] = append(out[node], Rule{Inbound: e.Inbound, Peer: c.ips[e.Peer], Action: c.action, Prob: c.prob, FaultID: c.pf.ID})
		}
	}
	return out
}

// netCuts is the set of active cuts, by fault id.
type netCuts struct {
	mu   sync.Mutex
	byID map[int]*netCut
}

func (s *netCuts) add(c *netCut) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[int]*netCut{}
	}
	s.byID[c.pf.ID] = c
}

func (s *netCuts) remove(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

// involving lists the active cuts that name node, by fault id.
func (s *netCuts) involving(node string) []*netCut {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*netCut
	ids := make([]int, 0, len(s.byID))
	for id, c := range s.byID {
		if _, ok := c.ips[node]; ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		out = append(out, s.byID[id])
	}
	return out
}

// nodeStarting is told that node is about to start (a kill's restart, a fence's power-on):
// for every active cut whose rules sit in node's namespace, which the start makes anew and
// empty, the peers get stand-in rules first, so node is cut from its first packet on (at
// the address it had; NodeStarted follows a new one). Peers that are down are skipped.
func (r *netRules) nodeStarting(ctx context.Context, node string) error {
	var errs []error
	for _, c := range r.cuts.involving(node) {
		if err := r.bridge(ctx, c, node); err != nil {
			errs = append(errs, fmt.Errorf("fault %d (%s) before the start of %s: %w", c.pf.ID, c.pf.Kind, node, err))
		}
	}
	return errors.Join(errs...)
}

func (r *netRules) bridge(ctx context.Context, c *netCut, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.healed {
		return nil
	}
	if c.bridges == nil {
		c.bridges = map[string]map[string][]Rule{}
	}
	placed := c.bridges[node]
	if placed == nil {
		placed = map[string][]Rule{}
		c.bridges[node] = placed
	}
	var errs []error
	for peer, rules := range c.bridgesFor(node) {
		rules = without(rules, placed[peer])
		if len(rules) == 0 {
			continue
		}
		nd, err := r.node(peer)
		if err != nil {
			return err
		}
		if st, err := nd.State(ctx); err != nil || !st.Running {
			continue // down: nothing passes through it
		}
		script, err := ApplyScript(rules)
		if err != nil {
			return err
		}
		r.touched.add(peer)
		placed[peer] = append(placed[peer], rules...)
		if _, err := r.iptables(ctx, peer, script); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unbridge removes node's stand-ins from its peers (node's own rules are back, or the cut
// heals). c.mu must be held.
func (r *netRules) unbridge(ctx context.Context, c *netCut, node string) error {
	var errs []error
	for _, peer := range sortedKeys(c.bridges[node]) {
		rules := c.bridges[node][peer]
		script, err := RemoveScript(rules)
		if err != nil {
			return err
		}
		nd, err := r.node(peer)
		if err != nil {
			return err
		}
		if st, err := nd.State(ctx); err == nil && !st.Running {
			delete(c.bridges[node], peer) // its namespace went with it
			continue
		}
		out, err := r.iptables(ctx, peer, script)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if k := countTagged(out, rules[0].comment()); k != 0 {
			errs = append(errs, fmt.Errorf("iptables in %s still lists %d stand-in rules of fault %d:\n%s", peer, k, c.pf.ID, out))
			continue
		}
		delete(c.bridges[node], peer)
	}
	if len(c.bridges[node]) == 0 {
		delete(c.bridges, node)
	}
	return errors.Join(errs...)
}

// nodeStarted puts back the active cuts that involve node, which has just (re)started in a
// fresh network namespace: its own rules, and, when it came back with another address, the
// rules on its peers that name it. It returns once the rules are listed (or what failed);
// each re-application is noted on the fault's fault-end record. Call it after every start
// of a node during the fault phase; a node no cut involves costs nothing.
func (r *netRules) nodeStarted(ctx context.Context, node string) error {
	var errs []error
	for _, c := range r.cuts.involving(node) {
		if err := r.reapply(ctx, c, node); err != nil {
			errs = append(errs, fmt.Errorf("fault %d (%s) after the restart of %s: %w", c.pf.ID, c.pf.Kind, node, err))
		}
	}
	return errors.Join(errs...)
}

func (r *netRules) reapply(ctx context.Context, c *netCut, node string) error {
	began := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.healed {
		return nil
	}
	nd, err := r.node(node)
	if err != nil {
		return err
	}
	ip, err := nd.IP(ctx)
	if err != nil || ip == "" {
		return fmt.Errorf("address of %s: %v", node, errOr(err, "no IP on the run network"))
	}
	old := c.rulesOn()
	moved := ip != c.ips[node]
	c.ips[node] = ip
	now := c.rulesOn()
	var did []string
	for _, other := range sortedKeys(now) {
		if other != node && !moved {
			continue // the peers' rules name an address that did not change
		}
		rules := now[other]
		// The restarted node's namespace is new: its rules go in whole. A peer gets the
		// rules naming the new address before those naming the old one come out, so the
		// cut holds throughout.
		add := rules
		if other != node {
			add = without(rules, old[other])
			if len(add) == 0 {
				continue
			}
		}
		script, err := ApplyScript(add)
		if err != nil {
			return err
		}
		r.touched.add(other)
		c.placed[other] = true
		out, err := r.iptables(ctx, other, script)
		if err != nil {
			return err
		}
		if other != node {
			if out, err = r.removeStale(ctx, other, old[other], rules); err != nil {
				return err
			}
		}
		if got, want := CountFaultRules(out, c.pf.ID), expectedRuleCount(rules); got != want {
			return fmt.Errorf("iptables in %s lists %d rules of fault %d, want %d:\n%s", other, got, c.pf.ID, want, out)
		}
		did = append(did, other)
	}
	// The node's own rules hold again: the stand-ins on its peers go.
	bridged := len(c.bridges[node]) > 0
	if err := r.unbridge(ctx, c, node); err != nil {
		return err
	}
	if len(did) > 0 {
		note := fmt.Sprintf("re-applied on %s after %s restarted", strings.Join(did, ","), node)
		if bridged {
			note += ", its peers holding the cut meanwhile"
		}
		if moved {
			note += " at a new address " + ip
		}
		c.notes = append(c.notes, fmt.Sprintf("%s (in %d ms)", note, time.Since(began).Milliseconds()))
	}
	return nil
}

// note is what the fault-end record says of the cut's re-applications ("" = none).
func (c *netCut) note() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.notes, "; ")
}

// removeStale deletes the rules in old that are not in keep, and returns the listing.
func (r *netRules) removeStale(ctx context.Context, node string, old, keep []Rule) (string, error) {
	script, err := RemoveScript(without(old, keep))
	if err != nil {
		return "", err
	}
	return r.iptables(ctx, node, script)
}
