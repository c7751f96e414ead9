//go:build chaos

package stores_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	consul "github.com/hashicorp/consul/api"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// Reset leaves an etcd cluster without the election keys and the leases they hang off.
func TestResetEtcd(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Etcd, 1)
	eps, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/splitbrain/splitbrain/694d9", "c1", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/other/key", "x"); err != nil {
		t.Fatal(err)
	}
	if err := stores.Reset(ctx, cl); err != nil {
		t.Fatalf("reset: %v", err)
	}
	res, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil || res.Count != 0 {
		t.Errorf("%d keys after reset (%v), want 0", res.Count, err)
	}
	if ttl, err := cli.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL != -1 {
		t.Errorf("lease after reset: ttl %v (%v), want revoked (-1)", ttl.TTL, err)
	}
	if err := cl.Ready(ctx); err != nil {
		t.Errorf("cluster does not serve after reset: %v", err)
	}
}

// Reset deletes the election tree, ephemerals of a live session included, and keeps /zookeeper.
func TestResetZooKeeper(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.ZooKeeper, 1)
	eps, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect(eps, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/splitbrain", "/splitbrain/splitbrain"} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := conn.CreateProtectedEphemeralSequential("/splitbrain/splitbrain/n-", []byte("c1"), acl); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := stores.Reset(rctx, cl); err != nil {
		t.Fatalf("reset: %v", err)
	}
	kids, _, err := conn.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0] != "zookeeper" {
		t.Errorf("root after reset: %v, want [zookeeper]", kids)
	}
	// A new election tree starts its sequence at 0 again, as on a fresh server.
	conn.Create("/splitbrain", nil, 0, acl)
	conn.Create("/splitbrain/splitbrain", nil, 0, acl)
	p, err := conn.Create("/splitbrain/splitbrain/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil || p != "/splitbrain/splitbrain/n-0000000000" {
		t.Errorf("first sequential znode after reset %q (%v), want sequence 0", p, err)
	}
}

// Reset frees a held Consul lock without a lock-delay (a fresh session takes it at once),
// destroys the sessions and deletes every key.
func TestResetConsul(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Consul, 1)
	eps, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := consul.NewClient(&consul.Config{Address: eps[0]})
	if err != nil {
		t.Fatal(err)
	}
	// A minute of lock-delay: were the lock freed by invalidating its session, the acquire
	// after the reset would be refused.
	sid, _, err := cli.Session().CreateNoChecks(&consul.SessionEntry{TTL: "60s", LockDelay: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "splitbrain/splitbrain/leader"
	if ok, _, err := cli.KV().Acquire(&consul.KVPair{Key: key, Value: []byte("c1"), Session: sid}, nil); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if _, err := cli.KV().Put(&consul.KVPair{Key: "other/key", Value: []byte("x")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := stores.Reset(ctx, cl); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if keys, _, err := cli.KV().Keys("", "", nil); err != nil || len(keys) != 0 {
		t.Errorf("keys after reset: %v (%v), want none", keys, err)
	}
	if ss, _, err := cli.Session().List(nil); err != nil || len(ss) != 0 {
		t.Errorf("%d sessions after reset (%v), want none", len(ss), err)
	}
	sid2, _, err := cli.Session().CreateNoChecks(&consul.SessionEntry{TTL: "60s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := cli.KV().Acquire(&consul.KVPair{Key: key, Value: []byte("c2"), Session: sid2}, nil); err != nil || !ok {
		t.Errorf("acquire after reset: %v %v, want the lock at once (no lock-delay)", ok, err)
	}
}
