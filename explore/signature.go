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
	w := newSigWalk(evs, ttl)
	for i, e := range evs {
		w.step(i, e)
	}
	return w.signature()
}

// sigWalk is BehaviourSignature's state while it walks the history in time order.
type sigWalk struct {
	ttl        time.Duration
	candidates map[string]bool
	feat       map[string]bool
	leaders    map[string]int64 // believes it leads → its token
	faults     map[int]activeFault
	tokenOwner map[int64]string
	maxToken   int64
	inFaults   bool
	elections  int // elections during the faults phase
	lastSym    string
	stepDownAt int // index of the last stepped-down with no election after it (-1: none)
	campaigned map[string]int
	faultFrom  map[int]int64     // fault id → its start
	pastTTL    map[string]string // a leader held under a fault past the TTL → the kind
	lastWrite  map[string]int64  // node → its last accepted write
	lastLeader string            // the node elected last
	minGap     int64             // smallest last-write-to-successor's-election gap (-1: none)
}

// activeFault is a fault in effect during the walk.
type activeFault struct {
	kind    string
	targets []string
}

func newSigWalk(evs []history.Event, ttl time.Duration) *sigWalk {
	w := &sigWalk{ttl: ttl, candidates: map[string]bool{}, feat: map[string]bool{}, leaders: map[string]int64{},
		faults: map[int]activeFault{}, tokenOwner: map[int64]string{}, stepDownAt: -1, campaigned: map[string]int{},
		faultFrom: map[int]int64{}, pastTTL: map[string]string{}, lastWrite: map[string]int64{}, minGap: -1}
	for _, e := range evs {
		if e.Source == history.SourceCandidate && e.Node != "" {
			w.candidates[e.Node] = true
		}
	}
	return w
}

func (w *sigWalk) add(format string, args ...any) { w.feat[fmt.Sprintf(format, args...)] = true }

// sym appends an abstract step to the order, as a pair with the one before it.
func (w *sigWalk) sym(s string) {
	if s == w.lastSym {
		return
	}
	if w.lastSym != "" {
		w.add("order:%s>%s", w.lastSym, s)
	}
	w.lastSym = s
}

// newest is the highest token among those who believe they lead.
func (w *sigWalk) newest() int64 {
	var m int64
	for _, t := range w.leaders {
		m = max(m, t)
	}
	return m
}

func (w *sigWalk) roleOf(node string) string {
	if !w.candidates[node] {
		return "store"
	}
	t, ok := w.leaders[node]
	switch {
	case !ok:
		return "follower"
	case t < w.newest():
		return "stale-leader"
	}
	return "leader"
}

func (w *sigWalk) rolesOf(targets []string) string {
	if len(targets) == 0 {
		return "none"
	}
	allCands := len(w.candidates) > 1 && len(targets) == len(w.candidates)
	roles := map[string]bool{}
	for _, t := range targets {
		if !w.candidates[t] {
			allCands = false
		}
		roles[w.roleOf(t)] = true
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

func (w *sigWalk) faultKinds() []string {
	var ks []string
	for _, f := range w.faults {
		if !slices.Contains(ks, f.kind) {
			ks = append(ks, f.kind)
		}
	}
	sort.Strings(ks)
	return ks
}

func (w *sigWalk) faulted(node string) (string, bool) {
	for _, f := range w.faults {
		if slices.Contains(f.targets, node) {
			return f.kind, true
		}
	}
	return "", false
}

// step takes event i.
func (w *sigWalk) step(i int, e history.Event) {
	switch e.Kind {
	case history.KindPhase:
		w.inFaults = e.Phase == history.PhaseFaults
	case history.KindFaultStart:
		w.faultStart(e)
	case history.KindFaultEnd:
		w.faultEnd(e)
	case history.KindCampaigning:
		w.campaigning(e)
	case history.KindElected:
		w.elected(e)
	case history.KindSteppedDown:
		w.steppedDown(i, e)
	case history.KindProcessExit:
		if w.candidates[e.Node] {
			delete(w.leaders, e.Node)
		}
	case history.KindSignal:
		if e.Signal == "SIGKILL" {
			delete(w.leaders, e.Node)
		}
	case history.KindWrite:
		w.write(e)
	case history.KindDecision:
		if e.Stale {
			w.add("stale-write-accepted")
		}
	case history.KindFenceRequest:
		w.add(FeatureFenceRequested)
	case history.KindError:
		if _, lead := w.leaders[e.Node]; !lead && len(w.leaders) > 0 {
			w.add("waiter-error-while-led")
		}
		w.sym("X")
	}
	if len(w.leaders) > 1 {
		w.add("two-believe-they-lead")
		if len(w.faults) > 0 {
			w.add("two-lead-during:%s", strings.Join(w.faultKinds(), "+"))
		}
	}
}

func (w *sigWalk) faultStart(e history.Event) {
	if e.Err != "" {
		w.add("fault-failed:%s", e.Fault)
		return
	}
	role := w.rolesOf(e.Targets)
	w.add("fault:%s@%s", e.Fault, role)
	if e.Trigger != "" {
		on, _, _ := strings.Cut(e.Trigger, ":")
		w.add("chain:%s>%s", on, e.Fault)
	}
	if len(w.faults) > 0 {
		w.add("overlapping-faults")
	}
	w.faults[e.FaultID] = activeFault{kind: e.Fault, targets: e.Targets}
	w.faultFrom[e.FaultID] = e.T
	w.sym("F+" + e.Fault + "@" + role)
}

func (w *sigWalk) faultEnd(e history.Event) {
	f, ok := w.faults[e.FaultID]
	if !ok {
		return
	}
	delete(w.faults, e.FaultID)
	if e.Err != "" {
		w.add("heal-failed:%s", f.kind)
	}
	if w.ttl > 0 && e.T-w.faultFrom[e.FaultID] >= int64(w.ttl) {
		for _, n := range f.targets {
			if _, lead := w.leaders[n]; lead {
				w.add(NearPrefix+"fault-past-ttl:%s@%s", f.kind, w.roleOf(n))
				w.pastTTL[n] = f.kind
			}
		}
	}
	w.sym("F-" + f.kind)
}

func (w *sigWalk) campaigning(e history.Event) {
	w.campaigned[e.Node]++
	if w.campaigned[e.Node] > 1 && len(w.leaders) > 0 {
		if _, lead := w.leaders[e.Node]; !lead {
			// A waiter started over (lost its session or its place) while someone led.
			w.add("waiter-recampaign-while-led")
			if len(w.faults) > 0 {
				w.add("waiter-recampaign-during:%s", strings.Join(w.faultKinds(), "+"))
			}
		}
	}
}

func (w *sigWalk) elected(e history.Event) {
	if prev, ok := w.tokenOwner[e.Token]; ok && prev != e.Node && e.Token != 0 {
		w.add("token-granted-twice")
	}
	if e.Token != 0 && e.Token < w.maxToken {
		w.add("token-lower-than-before")
	}
	w.tokenOwner[e.Token] = e.Node
	w.maxToken = max(w.maxToken, e.Token)
	if prev := w.lastLeader; prev != "" && prev != e.Node && w.lastWrite[prev] > 0 {
		if gap := e.T - w.lastWrite[prev]; gap >= 0 && (w.minGap < 0 || gap < w.minGap) {
			w.minGap = gap
		}
	}
	w.lastLeader = e.Node
	delete(w.pastTTL, e.Node)
	if len(w.leaders) > 0 {
		if _, again := w.leaders[e.Node]; !again {
			w.add("elected-while-another-leads")
		}
	}
	for _, k := range w.faultKinds() {
		w.add("elected-during:%s", k)
	}
	if kind, ok := w.faulted(e.Node); ok {
		w.add("elected-while-faulted:%s", kind)
	}
	w.leaders[e.Node] = e.Token
	if w.inFaults {
		w.elections++
	}
	w.stepDownAt = -1
	w.sym("E")
}

func (w *sigWalk) steppedDown(i int, e history.Event) {
	if _, ok := w.leaders[e.Node]; !ok {
		return
	}
	role := w.roleOf(e.Node)
	delete(w.leaders, e.Node)
	delete(w.pastTTL, e.Node)
	w.add("stepped-down:%s", role)
	for _, k := range w.faultKinds() {
		w.add("stepped-down-during:%s", k)
	}
	w.stepDownAt = i
	w.sym("D")
}

func (w *sigWalk) write(e history.Event) {
	if e.Result == history.ResultAccepted {
		if kind, ok := w.faulted(e.Node); ok {
			w.add("write-by-faulted:%s", kind)
		}
		if t, ok := w.leaders[e.Node]; ok && t < w.newest() {
			w.add("write-by-stale-leader")
		}
		if kind, ok := w.pastTTL[e.Node]; ok {
			// Still leading after being held past its lease: nothing but luck kept a
			// successor from being elected meanwhile.
			w.add(NearPrefix+"write-after-fault-past-ttl:%s", kind)
		}
		w.lastWrite[e.Node] = e.T
		if len(w.faults) > 0 {
			w.add("write-during:%s", strings.Join(w.faultKinds(), "+"))
		}
	} else if e.Result != "" {
		w.add("write-%s", e.Result)
	}
	w.sym("W" + e.Result)
}

// signature closes the walk: the features that need the whole history, sorted.
func (w *sigWalk) signature() Signature {
	if w.stepDownAt >= 0 {
		w.add("stepped-down-no-new-election")
	}
	w.add("elections-in-faults:%s", bucket(w.elections))
	if w.ttl > 0 && w.minGap >= 0 {
		w.add("%s", gapBucket(time.Duration(w.minGap), w.ttl))
	}
	out := make(Signature, 0, len(w.feat))
	for f := range w.feat {
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
