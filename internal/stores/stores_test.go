package stores

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

func TestParseKind(t *testing.T) {
	for _, k := range []string{"etcd", "zookeeper", "postgres", "redis", "redis-multi", "dynamodb", "consul", "kubernetes"} {
		if got, err := ParseKind(k); err != nil || string(got) != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	_, err := ParseKind("mysql")
	if err == nil || !strings.Contains(err.Error(), "consul, dynamodb, etcd, kubernetes, postgres, redis, redis-multi, zookeeper") {
		t.Fatalf("unknown kind error must list the valid ones: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Kind: storekinds.Etcd}
	if err := o.Validate(); err != nil || o.Nodes != 3 || o.Profile != "local" || o.ZKTickTime != defaultZKTick {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o = Options{Kind: storekinds.ZooKeeper, Nodes: 5}
	if err := o.Validate(); err != nil || o.Nodes != 5 {
		t.Fatalf("zk 5: %+v %v", o, err)
	}
	bad := map[string]Options{
		"exactly 1":      {Kind: storekinds.Postgres, Nodes: 3},
		"supports 1..7":  {Kind: storekinds.Etcd, Nodes: 8},
		"unknown store":  {Kind: "mysql"},
		"image profile":  {Kind: storekinds.Redis, Profile: "docker-hub"},
		"tick time":      {Kind: storekinds.ZooKeeper, ZKTickTime: time.Millisecond},
		"supports 1..9":  {Kind: storekinds.RedisMulti, Nodes: 10},
		"exactly 1 node": {Kind: storekinds.DynamoDB, Nodes: 2},
		"supports 1..7 ": {Kind: storekinds.ZooKeeper, Nodes: -1},
	}
	for want, o := range bad {
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(want)) {
			t.Errorf("%+v: want error containing %q, got %v", o, want, err)
		}
	}
}

func TestEtcdConfig(t *testing.T) {
	names := nodeNames("etcd", 3)
	if got := EtcdInitialCluster(names); got != "etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380,etcd-3=http://etcd-3:2380" {
		t.Fatalf("initial cluster %q", got)
	}
	cmd := strings.Join(EtcdCommand("run1", "etcd-2", names), " ")
	for _, want := range []string{
		"--name etcd-2 ", "--initial-advertise-peer-urls http://etcd-2:2380", "--advertise-client-urls http://etcd-2:2379",
		"--initial-cluster-token splitbrain-run1", "--heartbeat-interval 100", "--election-timeout 1000", "--initial-cluster-state new",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("etcd command lacks %q: %s", want, cmd)
		}
	}
}

func TestZooCfg(t *testing.T) {
	cfg := ZooCfg(nodeNames("zk", 3), 500*time.Millisecond)
	for _, want := range []string{
		"tickTime=500\n", "minSessionTimeout=1000\n", "maxSessionTimeout=60000\n", "standaloneEnabled=false\n",
		"server.1=zk-1:2888:3888;2181\n", "server.2=zk-2:2888:3888;2181\n", "server.3=zk-3:2888:3888;2181\n",
		"4lw.commands.whitelist=*\n", "dataDir=/data\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "server.4") {
		t.Error("zoo.cfg lists a fourth server")
	}
	// The minimum session must admit the 2 s sessions recipes use.
	if !strings.Contains(ZooCfg([]string{"zk-1"}, 2*time.Second), "minSessionTimeout=4000") {
		t.Error("min session must be 2 ticks")
	}
	single := ZooCfg([]string{"zk-1"}, 500*time.Millisecond)
	if !strings.Contains(single, "standaloneEnabled=true") || strings.Contains(single, "server.1") {
		t.Errorf("single-node zoo.cfg:\n%s", single)
	}
}

func TestSrvrField(t *testing.T) {
	out := "Zookeeper version: 3.8.0-1, built on 2023-01-01 00:00 UTC\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n"
	if v := SrvrField(out, "Mode"); v != "follower" {
		t.Fatalf("mode %q", v)
	}
	if v := SrvrField(out, "Zookeeper version"); !strings.HasPrefix(v, "3.8.0-1,") {
		t.Fatalf("version %q", v)
	}
	if v := SrvrField(out, "Missing"); v != "" {
		t.Fatalf("missing field %q", v)
	}
}

func TestPostgresCommandKeepalives(t *testing.T) {
	cmd := strings.Join(PostgresCommand(), " ")
	for _, want := range []string{"tcp_keepalives_idle=1", "tcp_keepalives_interval=1", "tcp_keepalives_count=3", "fsync=off"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("postgres command lacks %s", want)
		}
	}
	if dsn := PostgresDSN("localhost:1234"); !strings.HasPrefix(dsn, "postgres://postgres@localhost:1234/postgres?") {
		t.Errorf("dsn %q", dsn)
	}
}
