package suite

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// TestGroupsLeftRetireAfterTheLastRow: a store group's idle clusters are retired only once
// none of its rows is left to start or still running (a started row may not have taken its
// cluster yet); rows of no store retire nothing.
func TestGroupsLeftRetireAfterTheLastRow(t *testing.T) {
	row := func(name, store string, nodes int) Case {
		return Case{Name: name, Config: harness.Config{Store: store, StoreNodes: nodes}}
	}
	zk1, zk2, zk3 := row("zk1", "zookeeper", 0), row("zk2", "zookeeper", 0), row("zk3", "zookeeper", 3)
	zk5, etcd, peer := row("zk5", "zookeeper", 5), row("etcd", "etcd", 0), row("raft", "none", 0)
	var retired []string
	g := newGroupsLeft([]Case{zk1, zk2, zk3, zk5, etcd, peer}, func(c Case) { retired = append(retired, c.Name) })
	g.started(zk1)
	g.ended(zk1)
	if len(retired) != 0 {
		t.Fatalf("retired %v while ZooKeeper rows were still to start", retired)
	}
	g.started(zk2)
	g.started(zk3) // nodes 3 is the default size: the same group
	g.started(etcd)
	g.started(peer)
	g.ended(zk2)
	if len(retired) != 0 {
		t.Fatalf("retired %v while a ZooKeeper row still ran", retired)
	}
	g.ended(etcd)
	g.ended(peer)
	if !slices.Equal(retired, []string{"etcd"}) {
		t.Fatalf("retired %v, want [etcd]: its only row ended; the peer row has no store", retired)
	}
	g.ended(zk3)
	if !slices.Equal(retired, []string{"etcd", "zk3"}) {
		t.Fatalf("retired %v, want [etcd zk3]: the 3-node group's last row ended (the 5-node group is another)", retired)
	}
	g.started(zk5)
	g.ended(zk5)
	if !slices.Equal(retired, []string{"etcd", "zk3", "zk5"}) {
		t.Fatalf("retired %v, want the 5-node group retired after its row", retired)
	}
}

// TestServeTakesRetireLines: a serving child takes a retire line as an instruction to its pool,
// not as a row, and reports a line it cannot read instead of ignoring it.
func TestServeTakesRetireLines(t *testing.T) {
	var out strings.Builder
	in := `{"retire":{"store":"zookeeper","nodes":0}}` + "\n" + `{"retire":` + "\n"
	err := Serve(context.Background(), []Case{{Name: "known/row"}}, strings.NewReader(in), &out, Options{Parallel: 2})
	if err == nil || !strings.Contains(err.Error(), "unreadable control line") {
		t.Errorf("Serve: %v; want the unreadable control line named", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last serveLine
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &last) != nil || last.Stats == nil {
		t.Errorf("output %q: want only the pool figures (a retire line is no row)", out.String())
	}
}
