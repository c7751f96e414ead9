package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// delay: latency (± a spread) on the target candidate's connections to the store, added by
// a real TCP fault proxy (Toxiproxy) the candidates' store endpoints go through in runs
// whose schedule has a delay fault. Every byte is held for latency ± latency-jitter before
// it is passed on, per direction, so a request/response pays it twice with dir=both. The
// proxy sits between candidate and store, not in the kernel (this kernel may lack netem):
// connections stay open, nothing is dropped.
type delayKind struct{}

func (delayKind) def() kindDef {
	return kindDef{
		Traits: Traits{
			Name:          "delay",
			Summary:       "add latency ± jitter to a candidate's store connections (Toxiproxy between candidates and store)",
			DefaultTarget: TargetLeader,
			DefaultFor:    "2xTTL",
			Classes:       []NodeClass{ClassCandidate},
			Proxy:         true,
			Colour:        "#8250df",
			Started:       "slowed down towards the store",
			Healed:        "back to full speed towards the store",
		},
		params: []paramDef{
			{"latency", "added to every chunk of data in each affected direction, Go duration or NxTTL (whole ms), e.g. 200ms or 0.5xTTL", "500ms", checkPositiveDur},
			{"latency-jitter", "each chunk's latency varies by ± this (uniform), at most latency; the common key jitter shifts repeats instead", "0s", checkDur(false)},
			{"dir", "out (requests the candidate sends) | in (answers it receives) | both", "both", oneOf("in", "out", "both")},
		},
	}
}

func checkPositiveDur(v string) error {
	d, err := ParseDur(v)
	if err != nil {
		return err
	}
	if d.negative() || (d.D == 0 && d.TTLs == 0) {
		return fmt.Errorf("must be > 0")
	}
	return nil
}

func (delayKind) plan(p *planner, f *FaultSpec, pf *PlannedFault) error {
	if err := planProxyTargets(p, pf); err != nil {
		return err
	}
	lat, _ := time.ParseDuration(pf.Params["latency"])
	jit, _ := time.ParseDuration(pf.Params["latency-jitter"])
	if lat < time.Millisecond {
		return fmt.Errorf("latency=%s: the proxy counts whole milliseconds, use at least 1ms", pf.Params["latency"])
	}
	for key, d := range map[string]time.Duration{"latency": lat, "latency-jitter": jit} {
		if d%time.Millisecond != 0 {
			return fmt.Errorf("%s=%s: the proxy counts whole milliseconds, so it would run as %s; write a whole number of ms", key, pf.Params[key], d.Truncate(time.Millisecond))
		}
	}
	if jit > lat {
		return fmt.Errorf("latency-jitter=%s is larger than latency=%s: a chunk cannot leave before it arrived", pf.Params["latency-jitter"], pf.Params["latency"])
	}
	return nil
}

// planProxyTargets checks what every proxy fault needs: a store, and candidates as targets.
func planProxyTargets(p *planner, pf *PlannedFault) error {
	if len(p.topo.StoreNodes) == 0 {
		return fmt.Errorf("%s acts on candidate-to-store connections, and a --store none run has none", pf.Kind)
	}
	for _, name := range pf.Chosen {
		if !slices.Contains(p.topo.Candidates, name) {
			return fmt.Errorf("%s hits candidates only (their store connections), %s is a store node", pf.Kind, name)
		}
	}
	return nil
}

// wholeMs reads a duration param that the proxy takes in whole milliseconds; zero is allowed
// only where zeroOK.
func wholeMs(pf *PlannedFault, key string, zeroOK bool) (int64, error) {
	d, err := time.ParseDuration(pf.Params[key])
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", key, pf.Params[key], err)
	}
	if d%time.Millisecond != 0 || (d == 0 && !zeroOK) {
		return 0, fmt.Errorf("%s=%s: the proxy counts whole milliseconds, use e.g. %s", key, pf.Params[key], max(d.Round(time.Millisecond), time.Millisecond))
	}
	return d.Milliseconds(), nil
}

// streamToxics is one toxic of type typ per stream of dir, named after the fault.
func streamToxics(pf PlannedFault, typ string, attrs map[string]any) []Toxic {
	var out []Toxic
	for _, s := range delayStreams(pf.Params["dir"]) {
		out = append(out, Toxic{Name: proxyToxicPrefix + strconv.Itoa(pf.ID) + "-" + s, Type: typ, Stream: s, Attributes: attrs})
	}
	return out
}

// proxyToxicPrefix names every toxic the nemesis adds, so a sweep finds its own.
const proxyToxicPrefix = "splitbrain-fault-"

// delayStreams maps dir to Toxiproxy's streams (upstream: client to server).
func delayStreams(dir string) []string {
	switch dir {
	case "out":
		return []string{"upstream"}
	case "in":
		return []string{"downstream"}
	}
	return []string{"upstream", "downstream"}
}

func (delayKind) apply(ctx context.Context, n *Nemesis, pf PlannedFault) (*applied, error) {
	lat, err := time.ParseDuration(pf.Params["latency"])
	if err != nil {
		return nil, fmt.Errorf("latency=%q: %w", pf.Params["latency"], err)
	}
	jit, err := time.ParseDuration(pf.Params["latency-jitter"])
	if err != nil {
		return nil, fmt.Errorf("latency-jitter=%q: %w", pf.Params["latency-jitter"], err)
	}
	var toxics []Toxic
	for _, s := range delayStreams(pf.Params["dir"]) {
		toxics = append(toxics, Toxic{
			Name: proxyToxicPrefix + strconv.Itoa(pf.ID) + "-" + s, Type: "latency", Stream: s,
			Attributes: map[string]any{"latency": lat.Milliseconds(), "jitter": jit.Milliseconds()},
		})
	}
	return n.applyToxics(ctx, pf, toxics)
}

// applyToxics adds toxics to every store link of the fault's target candidates; the heal
// removes them and checks the proxy no longer lists them.
func (n *Nemesis) applyToxics(ctx context.Context, pf PlannedFault, toxics []Toxic) (*applied, error) {
	px := n.storeProxy()
	if px == nil {
		return nil, fmt.Errorf("%s needs the store fault proxy, and this run's candidates connect to the store directly (the run starts the proxy only when the plan has a %s fault)", pf.Kind, pf.Kind)
	}
	names, err := n.targets(ctx, pf)
	if err != nil {
		return nil, err
	}
	type added struct{ link, toxic string }
	var done []added
	heal := func(ctx context.Context) error {
		var errs []error
		links := map[string]bool{}
		for _, a := range done {
			links[a.link] = true
			if err := px.RemoveToxic(ctx, a.link, a.toxic); err != nil {
				errs = append(errs, fmt.Errorf("remove %s from %s: %w", a.toxic, a.link, err))
			}
		}
		for link := range links {
			listed, err := px.ToxicNames(ctx, link)
			if err != nil {
				errs = append(errs, fmt.Errorf("list toxics of %s: %w", link, err))
				continue
			}
			for _, a := range done {
				if a.link == link && slices.Contains(listed, a.toxic) {
					errs = append(errs, fmt.Errorf("%s still listed on %s after removal", a.toxic, link))
				}
			}
		}
		return errors.Join(errs...)
	}
	ap := &applied{targets: names, heal: heal}
	for _, name := range names {
		if !n.isCandidate(name) {
			return ap, fmt.Errorf("%s: %s hits candidates only (their store connections)", name, pf.Kind)
		}
		links := px.Links(name)
		if len(links) == 0 {
			return ap, fmt.Errorf("%s: the store proxy has no links for this candidate", name)
		}
		for _, link := range links {
			n.mu.Lock()
			n.proxyLinks[link] = true
			n.mu.Unlock()
			for _, t := range toxics {
				if err := px.AddToxic(ctx, link, t); err != nil {
					return ap, fmt.Errorf("%s: add %s to %s: %w", name, t.Name, link, err)
				}
				done = append(done, added{link, t.Name})
			}
		}
	}
	return ap, nil
}

func (n *Nemesis) storeProxy() StoreProxy {
	if e, ok := n.env.(StoreProxyEnv); ok {
		return e.StoreProxy()
	}
	return nil
}

// clearProxy removes every toxic of the nemesis from the links it touched and checks the
// listing (HealAll's sweep).
func (n *Nemesis) clearProxy(ctx context.Context) error {
	px := n.storeProxy()
	n.mu.Lock()
	links := keys(n.proxyLinks)
	n.mu.Unlock()
	if px == nil || len(links) == 0 {
		return nil
	}
	var errs []error
	for _, link := range links {
		listed, err := px.ToxicNames(ctx, link)
		if err != nil {
			errs = append(errs, fmt.Errorf("heal proxy link %s: %w", link, err))
			continue
		}
		left := false
		for _, name := range listed {
			if strings.HasPrefix(name, proxyToxicPrefix) {
				if err := px.RemoveToxic(ctx, link, name); err != nil {
					errs = append(errs, fmt.Errorf("heal proxy link %s: remove %s: %w", link, name, err))
					left = true
				}
			}
		}
		if !left {
			n.mu.Lock()
			delete(n.proxyLinks, link)
			n.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}
