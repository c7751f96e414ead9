//go:build chaos

package stores_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	consul "github.com/hashicorp/consul/api"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// launch starts a cluster of kind on a fresh run network and registers teardown plus the
// assertion that nothing of the run (container, frozen container, network) remains.
func launch(t *testing.T, kind stores.Kind, nodes int) (context.Context, stores.Cluster, string) {
	t.Helper()
	run := platformtest.NewRun(t, 5*time.Minute)
	logDir := t.TempDir()
	cl := run.LaunchStore(t, stores.Options{Kind: kind, Nodes: nodes, LogDir: logDir})
	t.Logf("%s x%d: version %s, ready in %v", kind, len(cl.Nodes()), cl.Version(), cl.ReadyDuration())
	if cl.Version() == "" {
		t.Error("no server version recorded")
	}
	if _, err := os.Stat(filepath.Join(logDir, cl.Nodes()[0].Name()+".log")); err != nil {
		t.Errorf("node log: %v", err)
	}
	return run.Ctx, cl, logDir
}

func waitStopped(t *testing.T, ctx context.Context, n *platform.Node) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // ends a wait for a lost signal; no bound
	for time.Now().Before(deadline) {
		if st, err := n.State(ctx); err == nil && !st.Running {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s still running after SIGKILL", n.Name())
}

// logOnceContains waits until the log file at path holds want at least n times (the engine
// delivers a container's output asynchronously) and returns the file; after a minute it
// returns what is there, for the caller's check to report.
func logOnceContains(t *testing.T, path, want string, n int) []byte {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), want) >= n || time.Now().After(deadline) {
			return b
		}
	}
}

// eventually retries f for up to d. Its error names the first and the last failure: under
// load the last attempt can fail on a slow Docker inspect and hide why the earlier ones did.
func eventually(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var first error
	for tries := 1; ; tries++ {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			if tries == 1 {
				return err
			}
			return fmt.Errorf("%d tries in %v; first: %v; last: %w", tries, d, first, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quorumFaults kills the store leader with SIGKILL and freezes a node, checking that the
// rest keeps serving while it is down and that the whole cluster serves after recovery.
// whileDown, when set, runs before the killed leader is restarted.
func quorumFaults(t *testing.T, ctx context.Context, cl stores.Cluster, whileDown func(leader *platform.Node, others []*platform.Node)) {
	leader, err := cl.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s", leader.Name())
	killed := time.Now()
	if err := leader.Kill(ctx, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, ctx, leader)
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	if err := cl.Ready(rctx); err == nil {
		t.Fatal("Ready succeeded with a member down: it must go through every member")
	}
	rcancel()
	var others []*platform.Node
	for _, n := range cl.Nodes() {
		if n != leader {
			others = append(others, n)
		}
	}
	for _, n := range others {
		if err := eventually(ctx, 60*time.Second, func(c context.Context) error { return cl.NodeRoundTrip(c, n) }); err != nil {
			t.Fatalf("quorum without %s does not serve through %s: %v", leader.Name(), n.Name(), err)
		}
	}
	t.Logf("every majority member served %v after the leader's SIGKILL", time.Since(killed))
	if nl, err := eventually2(ctx, cl); err != nil || nl == leader {
		t.Fatalf("new leader %v, %v", nl, err)
	}
	if whileDown != nil {
		whileDown(leader, others)
	}
	start := time.Now()
	if err := cl.RestartNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of %s until the whole cluster serves: %v", leader.Name(), time.Since(start))

	frozen := others[0]
	if err := frozen.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes() {
		if n == frozen {
			continue
		}
		// 30 s: with the killed server a voter again, the other two keep a quorum.
		if err := eventually(ctx, 30*time.Second, func(c context.Context) error { return cl.NodeRoundTrip(c, n) }); err != nil {
			t.Fatalf("quorum with %s frozen does not serve through %s: %v", frozen.Name(), n.Name(), err)
		}
	}
	if err := frozen.Thaw(ctx); err != nil {
		t.Fatal(err)
	}
	// 60 s: a Consul server frozen long enough is pruned too, and Ready then waits for its
	// promotion back to voter (10-20 s).
	thawed := time.Now()
	if err := eventually(ctx, 60*time.Second, cl.Ready); err != nil {
		t.Fatalf("cluster after thaw: %v", err)
	}
	t.Logf("after the thaw of %s the whole cluster serves in %v", frozen.Name(), time.Since(thawed))
}

func eventually2(ctx context.Context, cl stores.Cluster) (*platform.Node, error) {
	var l *platform.Node
	err := eventually(ctx, 60*time.Second, func(c context.Context) error {
		var err error
		l, err = cl.Leader(c)
		return err
	})
	return l, err
}

func TestEtcdCluster(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Etcd, 3)
	if eps := cl.Endpoints(); strings.Join(eps, ",") != "etcd-1:2379,etcd-2:2379,etcd-3:2379" {
		t.Errorf("endpoints %v", eps)
	}
	quorumFaults(t, ctx, cl, nil)
}

func TestZooKeeperEnsemble(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.ZooKeeper, 3)
	if !strings.HasPrefix(cl.Version(), "3.8") {
		t.Errorf("version %q, want 3.8.x", cl.Version())
	}
	quorumFaults(t, ctx, cl, nil)
}

func TestConsulCluster(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Consul, 3)
	if eps := cl.Endpoints(); strings.Join(eps, ",") != "consul-1:8500,consul-2:8500,consul-3:8500" {
		t.Errorf("endpoints %v", eps)
	}
	if want := strings.TrimPrefix(images.ConsulVersion, "v"); cl.Version() != want {
		t.Errorf("version %q, want %s", cl.Version(), want)
	}
	// A killed server comes back with a new IP: the others must take it back into Raft. Kept
	// down until autopilot prunes it, it rejoins as a non-voter: the restart must last until
	// it is promoted, or freezing another server next stops the cluster (CI, 2026-11-25).
	quorumFaults(t, ctx, cl, func(leader *platform.Node, others []*platform.Node) {
		start := time.Now()
		err := eventually(ctx, 60*time.Second, func(c context.Context) error {
			ep, err := others[0].Endpoint(c, "8500")
			if err != nil {
				return err
			}
			cli, err := consul.NewClient(&consul.Config{Address: ep})
			if err != nil {
				return err
			}
			cfg, err := cli.Operator().RaftGetConfiguration((&consul.QueryOptions{}).WithContext(c))
			if err != nil {
				return err
			}
			for _, s := range cfg.Servers {
				if s.Node == leader.Name() {
					return fmt.Errorf("%s still in the Raft configuration", leader.Name())
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("autopilot did not prune the killed %s: %v", leader.Name(), err)
		}
		t.Logf("autopilot pruned %s %v after the survivors served", leader.Name(), time.Since(start))
	})
}

// singleNodeFaults: kill -9 and restart, freeze and thaw; the server serves again each time.
func singleNodeFaults(t *testing.T, ctx context.Context, cl stores.Cluster) {
	if _, err := cl.Leader(ctx); !errors.Is(err, stores.ErrNotSupported) {
		t.Errorf("Leader on %s: %v, want ErrNotSupported", cl.Kind(), err)
	}
	n := cl.Nodes()[0]
	if err := n.Kill(ctx, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, ctx, n)
	if err := cl.Ready(ctx); err == nil {
		t.Fatal("Ready succeeded with the server killed")
	}
	start := time.Now()
	if err := cl.RestartNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart after SIGKILL until serving: %v", time.Since(start))
	if err := n.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if err := cl.Ready(fctx); err == nil {
		t.Error("a frozen server answered")
	}
	cancel()
	if err := n.Thaw(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctx, 60*time.Second, cl.Ready); err != nil {
		t.Fatalf("after thaw: %v", err)
	}
}

func TestPostgres(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.Postgres, 0)
	if !strings.HasPrefix(cl.Version(), "15") {
		t.Errorf("version %q, want 15.x", cl.Version())
	}
	singleNodeFaults(t, ctx, cl)
}

func TestRedis(t *testing.T) {
	ctx, cl, logDir := launch(t, storekinds.Redis, 0)
	if !strings.HasPrefix(cl.Version(), "7.") {
		t.Errorf("version %q, want 7.x", cl.Version())
	}
	singleNodeFaults(t, ctx, cl)
	// One "Ready to accept" line per server start in the log: none lost, none duplicated.
	b := logOnceContains(t, filepath.Join(logDir, "redis.log"), "Ready to accept connections", 2)
	if c := strings.Count(string(b), "Ready to accept connections"); c != 2 {
		t.Errorf("redis.log has %d ready lines, want 2 (start + restart)", c)
	}
}

func TestRedisMulti(t *testing.T) {
	ctx, cl, _ := launch(t, storekinds.RedisMulti, 3)
	if len(cl.Nodes()) != 3 {
		t.Fatalf("%d nodes", len(cl.Nodes()))
	}
	// Independent servers: one down does not stop the others.
	if err := cl.Nodes()[1].Kill(ctx, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, ctx, cl.Nodes()[1])
	for _, i := range []int{0, 2} {
		if err := cl.NodeRoundTrip(ctx, cl.Nodes()[i]); err != nil {
			t.Errorf("redis-%d with redis-2 down: %v", i+1, err)
		}
	}
	if err := cl.RestartNode(ctx, cl.Nodes()[1]); err != nil {
		t.Fatal(err)
	}
}

// DynamoDB (dynalite): round trip, kill/restart, freeze; the server keeps its data in memory,
// so a restarted one has lost every table (the round trip makes its own again), and Reset
// leaves no table behind.
func TestDynamoDB(t *testing.T) {
	ctx, cl, logDir := launch(t, storekinds.DynamoDB, 0)
	if !strings.HasPrefix(cl.Version(), "dynalite 3.2.2 (node v18.") {
		t.Errorf("version %q, want dynalite 3.2.2 on Debian's node 18", cl.Version())
	}
	eps, err := cl.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []string {
		out, err := stores.DynamoClient(eps[0]).ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		return out.TableNames
	}
	if got := tables(); len(got) != 1 || got[0] != "splitbrain_ready" {
		t.Fatalf("tables after the ready round trip: %v, want [splitbrain_ready]", got)
	}
	// A client that hangs up mid-request (a paused candidate's timeout) must not end the
	// server: stock dynalite throws on it and exits, turning fault runs unknown.
	conn, err := net.Dial("tcp", eps[0])
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: dynamodb\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Limit\":")
	conn.Close()
	if b := logOnceContains(t, filepath.Join(logDir, "dynamodb.log"), "client aborted a request", 1); !strings.Contains(string(b), "client aborted a request") {
		t.Errorf("dynamodb.log does not show the aborted request being absorbed:\n%s", b)
	}
	if got := tables(); len(got) != 1 {
		t.Fatalf("tables after an aborted request: %v", got)
	}
	singleNodeFaults(t, ctx, cl)
	if eps, err = cl.HostEndpoints(ctx); err != nil { // the restart changed the published port
		t.Fatal(err)
	}
	if err := stores.Reset(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if got := tables(); len(got) != 0 {
		t.Fatalf("tables after Reset: %v", got)
	}
	b := logOnceContains(t, filepath.Join(logDir, "dynamodb.log"), "listening on 8000", 2)
	if c := strings.Count(string(b), "listening on 8000"); c != 2 {
		t.Errorf("dynamodb.log has %d listening lines, want 2 (start + restart):\n%s", c, b)
	}
}

// BenchmarkLaunch measures up-to-ready per store (images present):
// go test -tags chaos -run '^$' -bench Launch -benchtime 3x ./internal/stores
func BenchmarkLaunch(b *testing.B) {
	for _, k := range []stores.Kind{storekinds.Etcd, storekinds.ZooKeeper, storekinds.Postgres, storekinds.Redis, storekinds.DynamoDB, storekinds.Consul} {
		b.Run(string(k), func(b *testing.B) {
			ctx := context.Background()
			eng := platformtest.Connect(b, ctx)
			var total, worst, docker time.Duration
			for i := 0; i < b.N; i++ {
				runID := platform.NewRunID()
				net, err := eng.NewNetwork(ctx, runID)
				if err != nil {
					b.Fatal(err)
				}
				cl, err := stores.Launch(ctx, eng, net, runID, stores.Options{Kind: k})
				if err != nil {
					eng.Sweep(ctx, platform.SweepFilter{RunID: runID})
					b.Fatal(err)
				}
				d := cl.ReadyDuration()
				total += d
				docker += cl.StartDuration()
				worst = max(worst, d)
				b.StopTimer()
				cl.Close(ctx)
				net.Remove(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
			b.ReportMetric(float64(worst.Milliseconds()), "max-ms-to-ready")
			b.ReportMetric(float64(docker.Milliseconds())/float64(b.N), "ms-containers-started")
		})
	}
}
