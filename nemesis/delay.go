package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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

func (delayKind) apply(ctx context.Context, px *proxyToxics, pf PlannedFault) (*applied, error) {
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
	return px.add(ctx, pf, toxics)
}
