package suite

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// TestGroupsLeftRetireAfterTheLastStart: a store group's idle clusters are retired only after
// a row of it ends with none of its rows left to start, once per such end; rows of no store
// retire nothing.
func TestGroupsLeftRetireAfterTheLastStart(t *testing.T) {
	row := func(name, store string, nodes int) Case {
		return Case{Name: name, Config: harness.Config{Store: store, StoreNodes: nodes}}
	}
	zk1, zk2, zk5, etcd, peer := row("zk1", "zookeeper", 0), row("zk2", "zookeeper", 0), row("zk5", "zookeeper", 5), row("etcd", "etcd", 0), row("raft", "none", 0)
	var retired []string
	g := newGroupsLeft([]Case{zk1, zk2, zk5, etcd, peer}, func(c Case) { retired = append(retired, c.Name) })
	g.started(zk1)
	g.ended(zk1)
	if len(retired) != 0 {
		t.Fatalf("retired %v while a ZooKeeper row was still to start", retired)
	}
	g.started(zk2)
	g.started(etcd)
	g.started(peer)
	g.ended(etcd)
	g.ended(peer)
	if !slices.Equal(retired, []string{"etcd"}) {
		t.Fatalf("retired %v, want [etcd]: its only row ended; the peer row has no store", retired)
	}
	g.ended(zk2)
	if !slices.Equal(retired, []string{"etcd", "zk2"}) {
		t.Fatalf("retired %v, want [etcd zk2]: the 3-node group's last row ended (the 5-node group is another)", retired)
	}
	g.started(zk5)
	g.ended(zk5)
	if !slices.Equal(retired, []string{"etcd", "zk2", "zk5"}) {
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
