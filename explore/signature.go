package explore

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// Signature is the behaviour of one run, abstracted from its history: a sorted set of
// features such as "elected-during:pause" or "order:F+kill@leader>E". Two runs with the
// same features behaved alike as far as the search can tell; a feature no earlier run
// showed is new behaviour, and the schedule that produced it is worth mutating.
type Signature []string

// Contains reports whether the signature has feature f.
func (s Signature) Contains(f string) bool {
	_, ok := slices.BinarySearch(s, f)
	return ok
}

// FeatureFenceRequested: a candidate asked the run's fence device for something (the guided
// search draws fence faults only once a run of its recipe did).
const FeatureFenceRequested = "fence-requested"

// NearPrefix marks the features of behaviour close to a violation (see BehaviourSignature):
// the search spends more of its mutations on schedules that showed them.
const NearPrefix = "near:"

// BehaviourSignature abstracts a run's history into its signature. It is a pure function
// of the events and the run's TTL: which roles the faults hit, which role transitions
// happened while a fault was in effect, and the order of the abstract steps (Mallory's
// happens-before summary, reduced to pairs of consecutive steps). Counts are bucketed (as
// AFL buckets hit counts), so a run with 7 elections and one with 8 do not count as
// different behaviour.
//
// Features starting with NearPrefix say how close the run came to a violation, relative to
// the TTL (ttl <= 0 leaves them out): a fault on a leader held past the TTL, a leader that
// wrote again after such a fault without stepping down (its lease had run out, a successor
// could have been elected: the zombie), and the smallest gap between a leader's last write
// and its successor's election (a gap near zero is a handoff that nearly overlapped).
func BehaviourSignature(events []history.Event, ttl time.Duration) Signature {
	evs := slices.Clone(events)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].T != evs[j].T {
			return evs[i].T < evs[j].T
		}
		return evs[i].Seq < evs[j].Seq
	})
	candidates := map[string]bool{}
	for _, e := range evs {
		if e.Source == history.SourceCandidate && e.Node != "" {
			candidates[e.Node] = true
		}
	}
	type active struct {
		kind    string
		targets []string
	}
	var (
		feat       = map[string]bool{}
		leaders    = map[string]int64{} // believes it leads → its token
		faults     = map[int]active{}
		tokenOwner = map[int64]string{}
		maxToken   int64
		inFaults   bool
		elections  int // elections during the faults phase
		lastSym    string
		stepDownAt = -1 // index of the last stepped-down with no election after it
		campaigned = map[string]int{}
		faultFrom  = map[int]int64{}     // fault id → its start
		pastTTL    = map[string]string{} // a leader held under a fault past the TTL → the kind
		lastWrite  = map[string]int64{}  // node → its last accepted write
		lastLeader string                // the node elected last
		minGap     = int64(-1)           // smallest last-write-to-successor's-election gap
	)
	add := func(format string, args ...any) { feat[fmt.Sprintf(format, args...)] = true }
	sym := func(s string) {
		if s == lastSym {
			return
		}
		if lastSym != "" {
			add("order:%s>%s", lastSym, s)
		}
		lastSym = s
	}
	newest := func() int64 {
		var m int64
		for _, t := range leaders {
			m = max(m, t)
		}
		return m
	}
	roleOf := func(node string) string {
		if !candidates[node] {
			return "store"
		}
		t, ok := leaders[node]
		switch {
		case !ok:
			return "follower"
		case t < newest():
			return "stale-leader"
		}
		return "leader"
	}
	rolesOf := func(targets []string) string {
		if len(targets) == 0 {
			return "none"
		}
		allCands := len(candidates) > 1 && len(targets) == len(candidates)
		roles := map[string]bool{}
		for _, t := range targets {
			if !candidates[t] {
				allCands = false
			}
			roles[roleOf(t)] = true
		}
		if allCands {
			return "all-candidates"
		}
		if len(roles) == 1 && roles["store"] && len(targets) > 1 {
			return "stores"
		}
		var rs []string
		for r := range roles {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		return strings.Join(rs, "+")
	}
	faultKinds := func() []string {
		var ks []string
		for _, f := range faults {
			if !slices.Contains(ks, f.kind) {
				ks = append(ks, f.kind)
			}
		}
		sort.Strings(ks)
		return ks
	}
	faulted := func(node string) (string, bool) {
		for _, f := range faults {
			if slices.Contains(f.targets, node) {
				return f.kind, true
			}
		}
		return "", false
	}
	for i, e := range evs {
		switch e.Kind {
		case history.KindPhase:
			inFaults = e.Phase == history.PhaseFaults
		case history.KindFaultStart:
			if e.Err != "" {
				add("fault-failed:%s", e.Fault)
				continue
			}
			role := rolesOf(e.Targets)
			add("fault:%s@%s", e.Fault, role)
			if e.Trigger != "" {
				on, _, _ := strings.Cut(e.Trigger, ":")
				add("chain:%s>%s", on, e.Fault)
			}
			if len(faults) > 0 {
				add("overlapping-faults")
			}
			faults[e.FaultID] = active{kind: e.Fault, targets: e.Targets}
			faultFrom[e.FaultID] = e.T
			sym("F+" + e.Fault + "@" + role)
		case history.KindFaultEnd:
			f, ok := faults[e.FaultID]
			if !ok {
				continue
			}
			delete(faults, e.FaultID)
			if e.Err != "" {
				add("heal-failed:%s", f.kind)
			}
			if ttl > 0 && e.T-faultFrom[e.FaultID] >= int64(ttl) {
				for _, n := range f.targets {
					if _, lead := leaders[n]; lead {
						add(NearPrefix+"fault-past-ttl:%s@%s", f.kind, roleOf(n))
						pastTTL[n] = f.kind
					}
				}
			}
			sym("F-" + f.kind)
		case history.KindCampaigning:
			campaigned[e.Node]++
			if campaigned[e.Node] > 1 && len(leaders) > 0 {
				if _, lead := leaders[e.Node]; !lead {
					// A waiter started over (lost its session or its place) while someone led.
					add("waiter-recampaign-while-led")
					if len(faults) > 0 {
						add("waiter-recampaign-during:%s", strings.Join(faultKinds(), "+"))
					}
				}
			}
		case history.KindElected:
			if prev, ok := tokenOwner[e.Token]; ok && prev != e.Node && e.Token != 0 {
				add("token-granted-twice")
			}
			if e.Token != 0 && e.Token < maxToken {
				add("token-lower-than-before")
			}
			tokenOwner[e.Token] = e.Node
			maxToken = max(maxToken, e.Token)
			if prev := lastLeader; prev != "" && prev != e.Node && lastWrite[prev] > 0 {
				if gap := e.T - lastWrite[prev]; gap >= 0 && (minGap < 0 || gap < minGap) {
					minGap = gap
				}
			}
			lastLeader = e.Node
			delete(pastTTL, e.Node)
			if len(leaders) > 0 {
				if _, again := leaders[e.Node]; !again {
					add("elected-while-another-leads")
				}
			}
			for _, k := range faultKinds() {
				add("elected-during:%s", k)
			}
			if kind, ok := faulted(e.Node); ok {
				add("elected-while-faulted:%s", kind)
			}
			leaders[e.Node] = e.Token
			if inFaults {
				elections++
			}
			stepDownAt = -1
			sym("E")
		case history.KindSteppedDown:
			if _, ok := leaders[e.Node]; !ok {
				continue
			}
			role := roleOf(e.Node)
			delete(leaders, e.Node)
			delete(pastTTL, e.Node)
			add("stepped-down:%s", role)
			for _, k := range faultKinds() {
				add("stepped-down-during:%s", k)
			}
			stepDownAt = i
			sym("D")
		case history.KindProcessExit:
			if candidates[e.Node] {
				if _, lead := leaders[e.Node]; lead {
					delete(leaders, e.Node)
				}
			}
		case history.KindSignal:
			if e.Signal == "SIGKILL" {
				delete(leaders, e.Node)
			}
		case history.KindWrite:
			if e.Result == history.ResultAccepted {
				if kind, ok := faulted(e.Node); ok {
					add("write-by-faulted:%s", kind)
				}
				if t, ok := leaders[e.Node]; ok && t < newest() {
					add("write-by-stale-leader")
				}
				if kind, ok := pastTTL[e.Node]; ok {
					// Still leading after being held past its lease: nothing but luck kept
					// a successor from being elected meanwhile.
					add(NearPrefix+"write-after-fault-past-ttl:%s", kind)
				}
				lastWrite[e.Node] = e.T
				if len(faults) > 0 {
					add("write-during:%s", strings.Join(faultKinds(), "+"))
				}
			} else if e.Result != "" {
				add("write-%s", e.Result)
			}
			sym("W" + e.Result)
		case history.KindDecision:
			if e.Stale {
				add("stale-write-accepted")
			}
		case history.KindFenceRequest:
			add(FeatureFenceRequested)
		case history.KindError:
			if _, lead := leaders[e.Node]; !lead && len(leaders) > 0 {
				add("waiter-error-while-led")
			}
			sym("X")
		}
		if len(leaders) > 1 {
			add("two-believe-they-lead")
			if len(faults) > 0 {
				add("two-lead-during:%s", strings.Join(faultKinds(), "+"))
			}
		}
	}
	if stepDownAt >= 0 {
		add("stepped-down-no-new-election")
	}
	add("elections-in-faults:%s", bucket(elections))
	if ttl > 0 && minGap >= 0 {
		add("%s", gapBucket(time.Duration(minGap), ttl))
	}
	out := make(Signature, 0, len(feat))
	for f := range feat {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// gapBucket names the smallest handoff gap (a leader's last write to its successor's
// election) relative to the TTL; the two closest buckets count as near a violation.
func gapBucket(gap, ttl time.Duration) string {
	switch {
	case gap < ttl/10:
		return NearPrefix + "handoff-gap<0.1xTTL"
	case gap < ttl/2:
		return NearPrefix + "handoff-gap<0.5xTTL"
	case gap < ttl:
		return "handoff-gap<1xTTL"
	}
	return "handoff-gap>=1xTTL"
}

// Nearness counts a signature's features that are close to a violation (NearPrefix, and
// the overlaps that are one write away from one).
func (s Signature) Nearness() int {
	n := 0
	for _, f := range s {
		if strings.HasPrefix(f, NearPrefix) || f == "two-believe-they-lead" || f == "write-by-stale-leader" || strings.HasPrefix(f, "two-lead-during:") {
			n++
		}
	}
	return n
}

// bucket groups a count the way AFL groups hit counts.
func bucket(n int) string {
	switch {
	case n <= 3:
		return fmt.Sprint(n)
	case n <= 7:
		return "4-7"
	case n <= 15:
		return "8-15"
	}
	return "16+"
}
