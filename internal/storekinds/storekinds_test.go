package storekinds

import (
	"slices"
	"strings"
	"testing"
)

func TestNodeNames(t *testing.T) {
	for _, c := range []struct {
		kind string
		n    int
		want []string
	}{
		{Etcd, 0, []string{"etcd-1", "etcd-2", "etcd-3"}},
		{ZooKeeper, 5, []string{"zk-1", "zk-2", "zk-3", "zk-4", "zk-5"}},
		{Postgres, 0, []string{"postgres"}},
		{RedisMulti, 0, []string{"redis-1", "redis-2", "redis-3", "redis-4", "redis-5"}},
		{Kubernetes, 0, []string{"etcd", "kube-apiserver", "kube-controller-manager"}},
	} {
		d, ok := Lookup(c.kind)
		if !ok {
			t.Fatalf("no kind %s", c.kind)
		}
		if got, err := d.NodeNames(c.n); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s NodeNames(%d) = %v, %v; want %v", c.kind, c.n, got, err, c.want)
		}
	}
	d, _ := Lookup(Redis)
	if _, err := d.NodeNames(3); err == nil || !strings.Contains(err.Error(), "drop --store-nodes") {
		t.Errorf("redis ×3: %v", err)
	}
	d, _ = Lookup(Etcd)
	if _, err := d.NodeNames(8); err == nil || !strings.Contains(err.Error(), "1..7") {
		t.Errorf("etcd ×8: %v", err)
	}
}

func TestDefinitions(t *testing.T) {
	if _, ok := Lookup(None); ok {
		t.Error("none has no definition: it runs no cluster")
	}
	for _, d := range All() {
		if d.Name == "" || d.Title == "" || d.Role == "" || d.ClockHow == "" {
			t.Errorf("%+v: name, title, role and clock words are required", d)
		}
		if d.MinNodes < 1 || d.DefaultNodes < d.MinNodes || d.DefaultNodes > d.MaxNodes {
			t.Errorf("%s: default %d not in %d..%d", d.Name, d.DefaultNodes, d.MinNodes, d.MaxNodes)
		}
		if d.Names != nil && (len(d.Names) != d.MinNodes || d.MinNodes != d.MaxNodes) {
			t.Errorf("%s: fixed names need a fixed node count", d.Name)
		}
	}
	if !slices.IsSorted(Names()) {
		t.Error("Names must be sorted")
	}
}

func TestAddAndRemove(t *testing.T) {
	remove := Add(Def{Name: "test-kind", Title: "Test", Role: Etcd, DefaultNodes: 1, MinNodes: 1, MaxNodes: 1, NodeStem: "t", ClockHow: "-"})
	if _, ok := Lookup("test-kind"); !ok || !strings.Contains(Titles(), "Test") {
		t.Fatal("an added kind is not listed")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("declaring a kind twice must panic")
			}
		}()
		Add(Def{Name: "test-kind"})
	}()
	remove()
	if _, ok := Lookup("test-kind"); ok {
		t.Fatal("a removed kind is still listed")
	}
}
