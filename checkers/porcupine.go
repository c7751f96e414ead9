package checkers

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// Porcupine model names (also the visualization file stems).
const (
	ModelFencedRegister = "fenced-register"
	ModelElectionLease  = "election-lease"
	ModelElectionStrict = "election-strict"
)

// Porcupine results.
const (
	PorcOK      = "ok"
	PorcIllegal = "illegal"
	PorcUnknown = "unknown" // timed out: inconclusive, never a pass
	PorcSkipped = "skipped"
)

// partitionTarget keeps each partition small: Porcupine's cache costs n²/8 bytes per partition and partitions run in parallel.
const partitionTarget = 10000

// visualizeLimit: beyond this many ops the visualization HTML would be hundreds of MB.
const visualizeLimit = 100000

// OpRef names an operation Porcupine could not linearize.
type OpRef struct {
	Desc    string `json:"desc"`
	Node    string `json:"node,omitempty"`
	Token   int64  `json:"token,omitempty"`
	CallT   int64  `json:"call_t"`
	ReturnT int64  `json:"return_t"` // math.MaxInt64 for an outcome never learned
}

// ModelResult is one Porcupine model's outcome.
type ModelResult struct {
	Model           string  `json:"model"`
	Result          string  `json:"result"`
	Meaning         string  `json:"meaning"`
	Ops             int     `json:"ops"`
	Partitions      int     `json:"partitions"`
	MaxPartitionOps int     `json:"max_partition_ops"`
	DurationNs      int64   `json:"duration_ns"`
	Visualization   string  `json:"visualization,omitempty"` // file name inside the output dir
	FailedPartition int     `json:"failed_partition,omitempty"`
	FailStartT      int64   `json:"fail_start_t,omitempty"`
	FailEndT        int64   `json:"fail_end_t,omitempty"`
	Unlinearized    []OpRef `json:"unlinearized,omitempty"` // first ops outside the longest linearizable prefix
	Note            string  `json:"note,omitempty"`
}

// PorcupineResult is checker 4's section.
type PorcupineResult struct {
	TimeoutNs int64         `json:"timeout_ns"`
	Models    []ModelResult `json:"models"`
}

type opStatus int8

const (
	stOK opStatus = iota
	stRejected
	stUnknown
)

func (s opStatus) String() string {
	return [...]string{"accepted", "rejected", "unknown"}[s]
}

// ---- fenced register ----

type fenceIn struct {
	Seed    bool
	Max     int64 // seed: the state carried over from earlier partitions
	Node    string
	Token   int64
	WriteID string
	Status  opStatus
}

type fenceState struct{ Max int64 }

const noMax = math.MinInt64

func fenceStep(st fenceState, in fenceIn) []any {
	if in.Seed {
		if st.Max != noMax {
			return nil
		}
		return []any{fenceState{in.Max}}
	}
	fresh := in.Token >= st.Max
	next := fenceState{in.Token}
	if next.Max < st.Max {
		next = st
	}
	switch in.Status {
	case stOK:
		if fresh {
			return []any{next}
		}
	case stRejected:
		if !fresh {
			return []any{st}
		}
	default: // maybe applied
		if fresh && next != st {
			return []any{st, next}
		}
		return []any{st}
	}
	return nil
}

func fencedRegisterModel(parts func([]porcupine.Operation) [][]porcupine.Operation) porcupine.Model {
	nd := &porcupine.NondeterministicModel{
		Partition: parts,
		Init:      func() []any { return []any{fenceState{noMax}} },
		Step: func(s, in, _ any) []any {
			return fenceStep(s.(fenceState), in.(fenceIn))
		},
		// Steps are O(1), so there is nothing to interrupt; the context is honoured by the
		// search loop between steps.
		StepContext: func(_ context.Context, s, in, _ any) []any {
			return fenceStep(s.(fenceState), in.(fenceIn))
		},
		Hash: func(s any) uint64 { return uint64(s.(fenceState).Max) * 0x9E3779B97F4A7C15 },
		DescribeOperation: func(in, _ any) string {
			i := in.(fenceIn)
			if i.Seed {
				return fmt.Sprintf("carried over: max=%s", descMax(i.Max))
			}
			return fmt.Sprintf("%s write %s token=%d → %s", i.Node, i.WriteID, i.Token, i.Status)
		},
		DescribeState: func(s any) string { return "max=" + descMax(s.(fenceState).Max) },
	}
	return escapeForVisualization(nd.ToModel())
}

func descMax(m int64) string {
	if m == noMax {
		return "none"
	}
	return fmt.Sprint(m)
}

// ---- election ----

type elKind int8

const (
	elSeed elKind = iota
	elCampaign
	elResign
	elObserve // the resource accepted a write with Token: it saw that leader
)

type elIn struct {
	Kind  elKind
	Node  string
	Token int64
	Seed  elState
	Why   string // resign: why the tenure ended
}

type elState struct {
	Holder string // "" = free
	Last   string // last holder (a node may be re-granted its own token)
	Token  int64
	Init   bool // the initial state, before any seed or grant
}

func electionStep(strict bool, st elState, in elIn) []any {
	if in.Kind == elSeed {
		if !st.Init {
			return nil
		}
		return []any{in.Seed}
	}
	pre := []elState{st}
	if !strict && st.Holder != "" {
		pre = append(pre, elState{Last: st.Last, Token: st.Token}) // the lease may expire silently
	}
	var out []any
	for _, p := range pre {
		p.Init = false
		switch in.Kind {
		case elObserve:
			// No observer may see an older leader: the write's token is the latest grant's.
			if !st.Init && in.Token == p.Token {
				out = append(out, p)
			}
		case elCampaign:
			if p.Holder != "" {
				continue
			}
			tok := p.Token
			if !strict && in.Token > 0 {
				if !(in.Token > p.Token || (in.Token == p.Token && in.Node == p.Last)) {
					continue
				}
			}
			if in.Token > tok {
				tok = in.Token
			}
			out = append(out, elState{Holder: in.Node, Last: in.Node, Token: tok})
		case elResign:
			if p.Holder == in.Node {
				out = append(out, elState{Last: p.Last, Token: p.Token})
			} else if !strict {
				out = append(out, p) // its lease had already expired
			}
		}
	}
	return out
}

func electionModel(strict bool, parts func([]porcupine.Operation) [][]porcupine.Operation) porcupine.Model {
	step := func(s, in any) []any { return electionStep(strict, s.(elState), in.(elIn)) }
	nd := &porcupine.NondeterministicModel{
		Partition:   parts,
		Init:        func() []any { return []any{elState{Init: true}} },
		Step:        func(s, in, _ any) []any { return step(s, in) },
		StepContext: func(_ context.Context, s, in, _ any) []any { return step(s, in) },
		Hash: func(s any) uint64 {
			st := s.(elState)
			h := fnv.New64a()
			fmt.Fprintf(h, "%s\x00%s\x00%d\x00%v", st.Holder, st.Last, st.Token, st.Init)
			return h.Sum64()
		},
		DescribeOperation: func(in, _ any) string {
			i := in.(elIn)
			switch i.Kind {
			case elSeed:
				return "carried over: " + describeEl(i.Seed)
			case elCampaign:
				return fmt.Sprintf("%s elected, token %d", i.Node, i.Token)
			case elObserve:
				return fmt.Sprintf("resource accepts %s's write, token %d", i.Node, i.Token)
			}
			return fmt.Sprintf("%s ends tenure (token %d, %s)", i.Node, i.Token, i.Why)
		},
		DescribeState: func(s any) string { return describeEl(s.(elState)) },
	}
	return escapeForVisualization(nd.ToModel())
}

func describeEl(s elState) string {
	if s.Holder == "" {
		return fmt.Sprintf("free (last token %d)", s.Token)
	}
	return fmt.Sprintf("held by %s, token %d", s.Holder, s.Token)
}

// ---- history → operations ----

type opMeta struct {
	node  string
	token int64
	carry bool // outcome never learned: may take effect in any later partition
}

func fencedOps(a *analysis) (ops []porcupine.Operation, unresolved int) {
	decided := make(map[string]int, len(a.decisions))
	for _, i := range a.decisions {
		if id := a.ev[i].WriteID; id != "" {
			decided[id] = i
		}
	}
	seen := make(map[string]bool, len(a.writes))
	for _, i := range a.writes {
		w := &a.ev[i]
		seen[w.WriteID] = true
		in := fenceIn{Node: w.Node, Token: w.Token, WriteID: w.WriteID}
		op := porcupine.Operation{Input: in, Call: w.CallT, Return: w.T}
		switch w.Result {
		case history.ResultAccepted:
			in.Status = stOK
		case history.ResultRejected:
			in.Status = stRejected
		default:
			if di, ok := decided[w.WriteID]; ok {
				// The resource's log tells what happened and when: tighten like etcd's WAL patching.
				d := &a.ev[di]
				in.Status = stRejected
				if d.Result == history.ResultAccepted {
					in.Status = stOK
				}
				if d.T > op.Call {
					op.Return = d.T
				} else {
					op.Return = op.Call
				}
			} else {
				in.Status = stUnknown
				op.Return = math.MaxInt64
				unresolved++
			}
		}
		op.Input = in
		op.Metadata = opMeta{node: w.Node, token: w.Token, carry: op.Return == math.MaxInt64}
		ops = append(ops, op)
	}
	// Writes only the resource saw (the candidate died before reporting): a point at the decision.
	for _, i := range a.decisions {
		d := &a.ev[i]
		if d.WriteID != "" && seen[d.WriteID] {
			continue
		}
		st := stRejected
		if d.Result == history.ResultAccepted {
			st = stOK
		}
		ops = append(ops, porcupine.Operation{Input: fenceIn{Node: d.Node, Token: d.Token, WriteID: d.WriteID, Status: st},
			Call: d.T, Return: d.T, Metadata: opMeta{node: d.Node, token: d.Token}})
	}
	sortOps(ops)
	return ops, unresolved
}

func electionOps(a *analysis, observe bool) []porcupine.Operation {
	var ops []porcupine.Operation
	// Every accepted write is an observation of its leader, a point at the decision.
	for _, i := range a.decisions {
		d := &a.ev[i]
		if observe && d.Result == history.ResultAccepted {
			ops = append(ops, porcupine.Operation{Input: elIn{Kind: elObserve, Node: d.Node, Token: d.Token},
				Call: d.T, Return: d.T, Metadata: opMeta{node: "resource", token: d.Token}})
		}
	}
	for _, tn := range a.tenures {
		ops = append(ops, porcupine.Operation{Input: elIn{Kind: elCampaign, Node: tn.Node, Token: tn.Token},
			Call: tn.GrantCallT, Return: tn.StartT, Metadata: opMeta{node: tn.Node, token: tn.Token}})
		if !tn.Open {
			ops = append(ops, porcupine.Operation{Input: elIn{Kind: elResign, Node: tn.Node, Token: tn.Token, Why: tn.EndReason},
				Call: tn.EndT, Return: tn.EndT, Metadata: opMeta{node: tn.Node, token: tn.Token}})
		}
	}
	sortOps(ops)
	return ops
}

func sortOps(ops []porcupine.Operation) {
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].Call != ops[j].Call {
			return ops[i].Call < ops[j].Call
		}
		return ops[i].Return < ops[j].Return
	})
}

// assignClients gives every op a dense ClientId so that no client has overlapping ops
// (the visualization draws one row per client): one per node, a fresh one when the node's
// previous op has not returned.
func assignClients(ops []porcupine.Operation) {
	type slot struct {
		id  int
		ret int64
	}
	byNode := map[string]*slot{}
	next := 0
	for i := range ops {
		m, _ := ops[i].Metadata.(opMeta)
		s := byNode[m.node]
		if s == nil || s.ret >= ops[i].Call {
			s = &slot{id: next}
			next++
			byNode[m.node] = s
		}
		ops[i].ClientId = s.id
		s.ret = ops[i].Return
	}
}

// cutQuiescent splits ops (sorted by Call) at instants where nothing is in flight, into
// partitions of about partitionTarget ops. Each later partition starts with a seed op that
// carries the state over, and copies of earlier never-returned ops (they may still land).
// canCut vetoes instants where the state is not known; seed builds the seed from ops before i.
func cutQuiescent(ops []porcupine.Operation, canCut func(t int64) bool, seed func(i int, t int64) any, seedClient int) [][]porcupine.Operation {
	if len(ops) <= partitionTarget {
		return [][]porcupine.Operation{ops}
	}
	var parts [][]porcupine.Operation
	var carried []porcupine.Operation
	cur := []porcupine.Operation{}
	maxRet := int64(math.MinInt64)
	for i := range ops {
		if len(cur) >= partitionTarget && maxRet < ops[i].Call && canCut(ops[i].Call) {
			parts = append(parts, cur)
			start := ops[i].Call
			cur = []porcupine.Operation{{ClientId: seedClient, Input: seed(i, start), Call: start - 1, Return: start - 1}}
			for _, c := range carried {
				c.Call = start
				cur = append(cur, c)
			}
		}
		cur = append(cur, ops[i])
		if ops[i].Return == math.MaxInt64 {
			carried = append(carried, ops[i])
		} else if ops[i].Return > maxRet {
			maxRet = ops[i].Return
		}
	}
	return append(parts, cur)
}

// reset and check make PorcupineResult the section of its checker (Results).
func (s *PorcupineResult) reset() { *s = PorcupineResult{Models: []ModelResult{}} }
func (s *PorcupineResult) check(ctx context.Context, a *analysis, rl *reasonList) {
	*s = checkPorcupine(ctx, a, rl)
}

// checkPorcupine is checker 4.
func checkPorcupine(ctx context.Context, a *analysis, rl *reasonList) PorcupineResult {
	timeout := a.p.porcupineTimeout()
	res := PorcupineResult{TimeoutNs: int64(timeout)}
	if timeout < 0 {
		for _, m := range []string{ModelFencedRegister, ModelElectionLease, ModelElectionStrict} {
			res.Models = append(res.Models, ModelResult{Model: m, Result: PorcSkipped, Meaning: "porcupine disabled (negative porcupine timeout)"})
		}
		return res
	}

	// Fenced register.
	fops, unresolved := fencedOps(a)
	maxAcc := make([]int64, len(fops)+1) // max accepted token among fops[:i]
	maxAcc[0] = noMax
	for i, op := range fops {
		maxAcc[i+1] = maxAcc[i]
		if in := op.Input.(fenceIn); in.Status == stOK && in.Token > maxAcc[i+1] {
			maxAcc[i+1] = in.Token
		}
	}
	assignClients(fops)
	seedClient := maxClient(fops) + 1
	fparts := cutQuiescent(fops, func(int64) bool { return true },
		func(i int, _ int64) any { return fenceIn{Seed: true, Max: maxAcc[i], Node: "seed"} }, seedClient)
	fr := runModel(ctx, a, ModelFencedRegister, fencedRegisterModel(func([]porcupine.Operation) [][]porcupine.Operation { return fparts }),
		fops, fparts, timeout)
	if unresolved > 0 {
		fr.Note = fmt.Sprintf("%d writes with unknown outcome and no resource decision were checked as maybe-applied", unresolved)
	}
	switch fr.Result {
	case PorcIllegal:
		fr.Meaning = "the writes' outcomes cannot be explained by any order of a fenced register (accept iff token >= max): fencing was violated"
		rl.add(Reason{Checker: "porcupine", Code: "fenced-register-illegal", Severity: SevInvalid, T: fr.FailStartT, EndT: fr.FailEndT,
			Nodes: refNodes(fr.Unlinearized), Tokens: refTokens(fr.Unlinearized),
			Message: fmt.Sprintf("porcupine: the fenced-register history is not linearizable (partition %d, %s–%s)%s",
				fr.FailedPartition, fmtT(fr.FailStartT, a.startT), fmtT(fr.FailEndT, a.startT), describeRefs(fr.Unlinearized))})
	case PorcUnknown:
		fr.Meaning = "the search timed out: inconclusive"
		rl.add(Reason{Checker: "porcupine", Code: "fenced-register-timeout", Severity: SevUnknown,
			Message: fmt.Sprintf("porcupine: the fenced-register check timed out after %v: inconclusive (raise --porcupine-timeout)", timeout)})
	case PorcOK:
		fr.Meaning = "every write outcome fits a fenced register"
	}
	res.Models = append(res.Models, fr)

	// Election, lease and strict forms.
	// The election state is known (free) at t when every tenure elected before t ended before t.
	maxEnd := runningMax(len(a.tenures), func(i int) int64 {
		if a.tenures[i].Open {
			return math.MaxInt64
		}
		return a.tenures[i].EndT
	})
	freeAt := func(t int64) bool {
		i := sort.Search(len(a.tenures), func(i int) bool { return a.tenures[i].StartT >= t }) - 1
		return i < 0 || maxEnd[i] < t
	}
	for _, strict := range []bool{false, true} {
		name := ModelElectionLease
		if strict {
			name = ModelElectionStrict
		}
		// Observations belong to the lease form only: strict mutual exclusion is about
		// grants, and a dead leader's in-flight write landing after the next grant is no
		// grant while held.
		eops := electionOps(a, !strict)
		assignClients(eops)
		seedClient := maxClient(eops) + 1
		eseed := func(i int, _ int64) any {
			var s elState
			for _, op := range eops[:i] {
				if in := op.Input.(elIn); in.Kind == elCampaign && in.Token >= s.Token {
					s.Token, s.Last = in.Token, in.Node
				}
			}
			return elIn{Kind: elSeed, Node: "seed", Seed: s}
		}
		eparts := cutQuiescent(eops, freeAt, eseed, seedClient)
		mr := runModel(ctx, a, name, electionModel(strict, func([]porcupine.Operation) [][]porcupine.Operation { return eparts }),
			eops, eparts, timeout)
		code := name + "-illegal"
		switch {
		case mr.Result == PorcIllegal && strict:
			mr.Meaning = "mutual exclusion did not hold under this fault: a grant happened while another candidate still believed it led (expected for lease recipes under pauses)"
		case mr.Result == PorcIllegal:
			mr.Meaning = "grants cannot be ordered with strictly increasing tokens, or the resource accepted a write from an older leader after a newer grant, even allowing silent lease expiry"
		case mr.Result == PorcUnknown:
			mr.Meaning = "the search timed out: inconclusive"
			code = name + "-timeout"
		case mr.Result == PorcOK && strict:
			mr.Meaning = "mutual exclusion held: no grant while another candidate believed it led"
		case mr.Result == PorcOK:
			mr.Meaning = "grants are totally ordered with increasing tokens and every accepted write came from the latest leader (allowing silent expiry)"
		}
		if mr.Result != PorcOK {
			rl.add(Reason{Checker: "porcupine", Code: code, Severity: SevFinding, T: mr.FailStartT, EndT: mr.FailEndT,
				Nodes: refNodes(mr.Unlinearized), Tokens: refTokens(mr.Unlinearized),
				Message: fmt.Sprintf("porcupine %s: %s%s", name, mr.Meaning, describeRefs(mr.Unlinearized))})
		}
		res.Models = append(res.Models, mr)
	}
	return res
}

func maxClient(ops []porcupine.Operation) int {
	m := -1
	for _, op := range ops {
		if op.ClientId > m {
			m = op.ClientId
		}
	}
	return m
}

func runModel(ctx context.Context, a *analysis, name string, m porcupine.Model, ops []porcupine.Operation, parts [][]porcupine.Operation, timeout time.Duration) ModelResult {
	mr := ModelResult{Model: name, Ops: len(ops), Partitions: len(parts)}
	for _, p := range parts {
		if len(p) > mr.MaxPartitionOps {
			mr.MaxPartitionOps = len(p)
		}
	}
	if len(ops) == 0 {
		mr.Result, mr.Partitions, mr.Meaning = PorcOK, 0, "no operations to check"
		return mr
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if timeout <= 0 || ctx.Err() != nil {
		mr.Result = PorcUnknown
		return mr
	}
	t0 := time.Now()
	r, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	mr.DurationNs = time.Since(t0).Nanoseconds()
	switch r {
	case porcupine.Ok:
		mr.Result = PorcOK
	case porcupine.Illegal:
		mr.Result = PorcIllegal
		locateFailure(&mr, m, info, parts)
	default:
		mr.Result = PorcUnknown
	}
	if a.p.OutputDir != "" {
		if len(ops) > visualizeLimit {
			mr.Note = fmt.Sprintf("visualization skipped: %d ops exceed %d", len(ops), visualizeLimit)
		} else {
			info.AddAnnotations(annotations(a))
			file := "porcupine-" + name + ".html"
			if err := os.MkdirAll(a.p.OutputDir, 0o755); err == nil {
				if err := porcupine.VisualizePath(m, info, filepath.Join(a.p.OutputDir, file)); err == nil {
					mr.Visualization = file
				} else {
					mr.Note = "visualization failed: " + err.Error()
				}
			} else {
				mr.Note = "visualization failed: " + err.Error()
			}
		}
	}
	return mr
}

// locateFailure finds the first illegal partition and the ops outside its longest
// linearizable prefix.
func locateFailure(mr *ModelResult, m porcupine.Model, info porcupine.LinearizationInfo, parts [][]porcupine.Operation) {
	pl := info.PartialLinearizations()
	for p := range parts {
		if p >= len(pl) {
			break
		}
		longest := []int{}
		for _, l := range pl[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(parts[p]) {
			continue
		}
		in := make([]bool, len(parts[p]))
		for _, i := range longest {
			in[i] = true
		}
		mr.FailedPartition = p
		mr.FailStartT = parts[p][0].Call
		for i, op := range parts[p] {
			if op.Return != math.MaxInt64 && op.Return > mr.FailEndT {
				mr.FailEndT = op.Return
			}
			if !in[i] && len(mr.Unlinearized) < 5 {
				meta, _ := op.Metadata.(opMeta)
				mr.Unlinearized = append(mr.Unlinearized, OpRef{Desc: m.DescribeOperation(op.Input, op.Output),
					Node: meta.node, Token: meta.token, CallT: op.Call, ReturnT: op.Return})
			}
		}
		return
	}
}

func refNodes(rs []OpRef) (out []string) {
	for _, r := range rs {
		out = append(out, r.Node)
	}
	return
}

func refTokens(rs []OpRef) (out []int64) {
	for _, r := range rs {
		out = append(out, r.Token)
	}
	return
}

func describeRefs(rs []OpRef) string {
	if len(rs) == 0 {
		return ""
	}
	return fmt.Sprintf("; first operation that cannot be placed: %s", rs[0].Desc)
}

// annotations marks fault windows, tenures and overlaps on the visualization.
func annotations(a *analysis) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range a.faults {
		desc := fmt.Sprintf("%s %v", f.Kind, f.Targets)
		bg := "#E9DCA0"
		if f.Error != "" {
			desc += " (did not apply)"
			bg = "#DDDDDD"
		}
		out = append(out, porcupine.Annotation{Tag: "faults", Start: f.StartT, End: f.EndT, Description: desc,
			Details: fmt.Sprintf("fault %d %s %v spec=%q %s", f.ID, f.Kind, f.Targets, f.Spec, f.Error), BackgroundColor: bg})
	}
	for _, tn := range a.tenures {
		out = append(out, porcupine.Annotation{Tag: "leader " + tn.Node, Start: tn.StartT, End: tn.EndT,
			Description: fmt.Sprintf("token %d", tn.Token), Details: fmt.Sprintf("tenure %d of %s, token %d, ended by %s", tn.ID, tn.Node, tn.Token, tn.EndReason),
			BackgroundColor: "#A0E9B0"})
	}
	return out
}
