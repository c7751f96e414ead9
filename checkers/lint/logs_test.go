package lint

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// startFails is a run in which every candidate exits with code at once.
func startFails(code int) []history.Event {
	return []history.Event{
		{T: 1 * ms, Kind: history.KindRunStart},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c1"},
		{T: 5 * ms, Kind: history.KindProcessExit, Node: "c1", Exit: &code},
		{T: 300 * ms, Kind: history.KindRunEnd},
	}
}

func find(ps []Problem, code string) *Problem {
	for i := range ps {
		if ps[i].Code == code {
			return &ps[i]
		}
	}
	return nil
}

func lintWith(t *testing.T, evs []history.Event, opts Options) []Problem {
	t.Helper()
	for i := range evs {
		evs[i].V, evs[i].Seq = history.Version, int64(i+1)
		if evs[i].Source == "" {
			evs[i].Source = history.SourceOf(evs[i].Kind)
		}
	}
	return Check(evs, nil, opts)
}

// TestLogSignsNameTheStoreMistake: a line in a candidate's log that gives a known connection
// mistake away becomes one problem with the fix for that store, quoted without raw control
// characters; a sign of another store's mistake is not reported.
func TestLogSignsNameTheStoreMistake(t *testing.T) {
	for _, c := range []struct{ store, log, want, fixHas string }{
		{"dynamodb", `acquire: operation error DynamoDB: UpdateItem, request send failed, Post "dynamodb:///": unsupported protocol scheme "dynamodb"`,
			"endpoint-without-scheme", `"http://" + the endpoint`},
		{"dynamodb", "botocore.exceptions.NoRegionError: You must specify a region.", "no-region", "us-east-1"},
		{"dynamodb", "operation error DynamoDB: ListTables, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found", "no-credentials", "CredentialsProviderFunc"},
		{"consul", "failed to read lock: Get \"http://127.0.0.1:8500/v1/kv/x\": dial tcp 127.0.0.1:8500: connect: connection refused", "consul-default-address", "api.Config{Address: ep"},
		{"kubernetes", "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined", "in-cluster-config", "SPLITBRAIN_STORE_KUBECONFIG"},
		{"redis", "dial tcp 127.0.0.1:6379: connect: connection refused \x1b[31m", "store-on-localhost", "SPLITBRAIN_STORE_ENDPOINTS"},
	} {
		ps := lintWith(t, good(), Options{Store: c.store, Logs: map[string]string{"c2": "starting\n" + c.log + "\n"}})
		p := find(ps, c.want)
		if p == nil {
			t.Errorf("%s log %q: no %s in %s", c.store, c.log, c.want, codes(ps))
			continue
		}
		if len(ps) != 1 {
			t.Errorf("%s: one mistake, want one problem, got %s", c.store, codes(ps))
		}
		if !strings.Contains(p.Fix, c.fixHas) || p.Nodes[0] != "c2" || p.Example == "" {
			t.Errorf("%s: problem %+v, want the fix to contain %q", c.want, p, c.fixHas)
		}
		if strings.ContainsRune(p.Example, 0x1b) {
			t.Errorf("%s: example quotes a raw ESC: %q", c.want, p.Example)
		}
	}
	// The same DynamoDB line on another store is not that store's mistake.
	if ps := lintWith(t, good(), Options{Store: "redis", Logs: map[string]string{"c1": `unsupported protocol scheme "dynamodb"`}}); len(ps) != 0 {
		t.Errorf("dynamodb sign on redis: %s", codes(ps))
	}
}

// TestExit64NamesTheUnsetVariable: a candidate that exits 64 asking for a variable the
// harness does not set with this store is told which and what to read instead; one that
// names a variable that is set gets the generic problem with its log's last lines.
func TestExit64NamesTheUnsetVariable(t *testing.T) {
	ps := lintWith(t, startFails(64), Options{Store: "none",
		Logs: map[string]string{"c1": "go-candidate: SPLITBRAIN_STORE_ENDPOINTS is not set\n"}})
	p := find(ps, "requires-unset-variable")
	if p == nil || ps[0].Code != "requires-unset-variable" {
		t.Fatalf("problems %s, want requires-unset-variable first", codes(ps))
	}
	if !strings.Contains(p.What, "SPLITBRAIN_STORE_ENDPOINTS") || !strings.Contains(p.What, "store none") ||
		!strings.Contains(p.Fix, "SPLITBRAIN_PEERS") || p.Rule != "R15" {
		t.Errorf("problem %+v", p)
	}
	// The same variable is set on a store: not the cause, so the generic problem.
	ps = lintWith(t, startFails(64), Options{Store: "etcd",
		Logs: map[string]string{"c1": "go-candidate: SPLITBRAIN_STORE_ENDPOINTS is not set\n"}})
	if find(ps, "requires-unset-variable") != nil || find(ps, "bad-environment") == nil {
		t.Errorf("etcd: problems %s, want bad-environment only", codes(ps))
	}
	// Optional variables set only with a flag.
	ps = lintWith(t, startFails(64), Options{Store: "redis",
		Logs: map[string]string{"c1": "KeyError: 'SPLITBRAIN_RENEW_INTERVAL'\n"}})
	if p := find(ps, "requires-unset-variable"); p == nil || !strings.Contains(p.Fix, "--renew-interval") {
		t.Errorf("renew interval: problems %s", codes(ps))
	}
	// Another exit code is not an environment problem.
	if ps := lintWith(t, startFails(1), Options{Store: "none",
		Logs: map[string]string{"c1": "SPLITBRAIN_STORE_ENDPOINTS is not set\n"}}); find(ps, "requires-unset-variable") != nil {
		t.Errorf("exit 1: %s", codes(ps))
	}
}

// TestSlowTakeover: after a handoff SIGTERM the next election must come within the bound.
func TestSlowTakeover(t *testing.T) {
	// good(): c1 steps down at 110 ms, c2 is elected at 160 ms.
	if ps := lintWith(t, good(), Options{TakeoverBound: 20 * time.Millisecond}); find(ps, "slow-takeover") == nil {
		t.Errorf("50 ms takeover, bound 20 ms: %s", codes(ps))
	}
	if ps := lintWith(t, good(), Options{TakeoverBound: time.Second}); len(ps) != 0 {
		t.Errorf("50 ms takeover, bound 1 s: %s", codes(ps))
	}
	// Nobody elected before teardown counts too.
	evs := good()
	var cut []history.Event
	for _, e := range evs {
		if e.Node == "c2" && (e.Kind == history.KindElected || e.Kind == history.KindWrite || e.Kind == history.KindDecision) {
			continue
		}
		if e.Kind == history.KindSignal && e.Node == "c2" {
			cut = append(cut, history.Event{T: e.T - 1, Kind: history.KindPhase, Phase: "teardown"})
		}
		cut = append(cut, e)
	}
	ps := lintWith(t, cut, Options{TakeoverBound: 20 * time.Millisecond})
	if p := find(ps, "slow-takeover"); p == nil || !strings.Contains(p.What, "c1 resigned") {
		t.Errorf("no election until teardown: %s", codes(ps))
	}
}

// TestLeaderOutlivesCut: a leader cut off from its store by a partition must stop believing
// within the bound; one that steps down in time, or a cut healed before the bound, is fine.
func TestLeaderOutlivesCut(t *testing.T) {
	cut := func(stepAt, healAt int64) []history.Event {
		evs := []history.Event{
			{T: 1 * ms, Kind: history.KindRunStart},
			{T: 2 * ms, Kind: history.KindProcessStart, Node: "c1"},
			{T: 10 * ms, Kind: history.KindCampaigning, Node: "c1"},
			{T: 20 * ms, Kind: history.KindElected, Node: "c1", Token: 5},
			{T: 100 * ms, Kind: history.KindFaultStart, Fault: "partition", Targets: []string{"c1"}, FaultID: 1},
		}
		later := []history.Event{
			{T: stepAt, Kind: history.KindSteppedDown, Node: "c1", Reason: "lease deadline passed"},
			{T: healAt, Kind: history.KindFaultEnd, Fault: "partition", Targets: []string{"c1"}, FaultID: 1},
		}
		if healAt < stepAt {
			later[0], later[1] = later[1], later[0]
		}
		return append(append(evs, later...), history.Event{T: 900 * ms, Kind: history.KindRunEnd})
	}
	bound := 50 * time.Millisecond
	ps := lintWith(t, cut(300*ms, 400*ms), Options{CutBound: bound})
	if p := find(ps, "leader-outlives-cut"); p == nil || p.Nodes[0] != "c1" || p.Rule != "R16" {
		t.Errorf("stepped down 200 ms into the cut, bound 50 ms: %s", codes(ps))
	}
	if ps := lintWith(t, cut(130*ms, 400*ms), Options{CutBound: bound}); find(ps, "leader-outlives-cut") != nil {
		t.Errorf("stepped down 30 ms into the cut: %s", codes(ps))
	}
	if ps := lintWith(t, cut(300*ms, 120*ms), Options{CutBound: bound}); find(ps, "leader-outlives-cut") != nil {
		t.Errorf("cut healed after 20 ms: %s", codes(ps))
	}
}

// TestTakeoverJudgedByTime: the successor's "elected" can be recorded before the resigning
// leader's SIGTERM and "stepped-down" (independent pipes); its time, not its place in the
// history, counts (a measured false alarm: a 8 ms handoff reported as 6 s).
func TestTakeoverJudgedByTime(t *testing.T) {
	zero := 0
	evs := []history.Event{
		{T: 1 * ms, Kind: history.KindRunStart},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c1"},
		{T: 2 * ms, Kind: history.KindProcessStart, Node: "c2"},
		{T: 10 * ms, Kind: history.KindCampaigning, Node: "c1"},
		{T: 11 * ms, Kind: history.KindCampaigning, Node: "c2"},
		{T: 20 * ms, Kind: history.KindElected, Node: "c1", Token: 5},
		{T: 115 * ms, Kind: history.KindElected, Node: "c2", Token: 6}, // recorded first
		{T: 100 * ms, Kind: history.KindSignal, Node: "c1", Signal: "SIGTERM", Reason: "handoff"},
		{T: 110 * ms, Kind: history.KindSteppedDown, Node: "c1", Reason: "sigterm"},
		{T: 150 * ms, Kind: history.KindProcessExit, Node: "c1", Exit: &zero},
		{T: 2000 * ms, Kind: history.KindPhase, Phase: "teardown"},
		{T: 2001 * ms, Kind: history.KindRunEnd},
	}
	if ps := lintWith(t, evs, Options{TakeoverBound: 20 * time.Millisecond}); find(ps, "slow-takeover") != nil {
		t.Errorf("5 ms takeover recorded out of order: %s", codes(ps))
	}
}
