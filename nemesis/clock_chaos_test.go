//go:build chaos

package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
)

// waitSkew polls skew() until it lies within tol of want or the deadline passes; it returns
// the last value seen and whether it matched. Polling covers the moment between the fault
// landing and the next write that shows it.
func waitSkew(t *testing.T, within time.Duration, want, tol time.Duration, skew func() (time.Duration, error)) (time.Duration, bool) {
	t.Helper()
	var last time.Duration
	var lastErr error
	for deadline := time.Now().Add(within); ; {
		d, err := skew()
		if err == nil {
			last = d
			if diff := d - want; diff > -tol && diff < tol {
				return d, true
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			if lastErr != nil {
				t.Logf("last error: %v", lastErr)
			}
			return last, false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startNaiveLease starts c2 as a real naive-lease candidate on the env's Redis and returns
// it with skew: expiry − real now of the record c2 last wrote (a true clock gives (0, TTL]).
func startNaiveLease(t *testing.T, ctx context.Context, e *chaosEnv, ttl time.Duration) (*platform.Node, func() (time.Duration, error)) {
	t.Helper()
	election := "clock-chaos"
	cc := contract.Config{
		NodeID: "c2", Store: storekinds.Redis, Endpoints: e.cluster.Endpoints(),
		ResourceURL: "http://c1:8080", LeaseTTL: ttl, WriteInterval: 50 * time.Millisecond,
		ClockFile: defaultCandidateClockFile, ElectionName: election, Recipe: "naive-lease",
	}
	env := map[string]string{}
	for _, kv := range cc.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cand, err := e.eng.Start(ctx, e.runID, e.net, platform.NodeSpec{
		Name: "c2", Role: "candidate", Image: e.imgs[images.RoleCandidate],
		Cmd: []string{"candidate", "--recipe", "naive-lease"}, Env: env, LogDir: e.logDir,
		Files: []platform.File{{Path: defaultCandidateClockFile, Content: []byte("0\n"), Mode: 0o666}},
	})
	if cand != nil {
		e.cands = append(e.cands, cand) // the env's cleanup terminates it
	}
	if err != nil {
		t.Fatal(err)
	}
	eps, err := e.cluster.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: eps[0]})
	t.Cleanup(func() { rdb.Close() })
	// expiry - real now of the record c2 wrote; a holder on a true clock gives (0, TTL].
	skew := func() (time.Duration, error) {
		b, err := rdb.Get(ctx, "splitbrain:naive:"+election).Bytes()
		if err != nil {
			return 0, err
		}
		var rec struct {
			Holder string `json:"holder"`
			Expiry int64  `json:"expiry"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return 0, fmt.Errorf("record %q: %w", b, err)
		}
		if rec.Holder != "c2" {
			return 0, fmt.Errorf("record held by %q, want c2", rec.Holder)
		}
		return time.Until(time.Unix(0, rec.Expiry)), nil
	}
	return cand, skew
}

// A real naive-lease candidate decides and writes its lease expiry on its own clock: a -1h
// bump of that candidate's clock shows in the record it writes to Redis, and heal undoes it.
func TestChaosClockCandidateLease(t *testing.T) {
	ctx, e := newChaosEnv(t, storekinds.Redis, 0) // c1 runs the fenced resource
	const ttl = 2 * time.Second
	cand, skew := startNaiveLease(t, ctx, e, ttl)
	tol := ttl + 5*time.Second
	if d, ok := waitSkew(t, 30*time.Second, 0, tol, skew); !ok {
		t.Fatalf("before the fault c2's lease expiry is %v from real now, want within %v (candidate log: %s)", d, tol, cand.LogPath())
	}
	_, _, heal := applyNow(t, ctx, e, "clock:op=bump,target=node:c2,delta=-1h,at=0s,for=1m", 1)
	// The FROM-scratch candidate image has no mv: the offset file must still be replaced by a
	// rename (the splitbrain binary's own), never by an in-place copy a reader can see empty.
	if i, ok := renamerOf.Load(cand.ID()); !ok || i.(int) < 0 || renamers[i.(int)][0] != images.CandidateBinary {
		t.Errorf("offset file in the scratch candidate image written by renamer %v (ok=%v), want %s rename", i, ok, images.CandidateBinary)
	}
	d, ok := waitSkew(t, 10*time.Second, -time.Hour, tol, skew)
	t.Logf("after -1h bump: expiry - now = %v", d)
	if !ok {
		t.Errorf("c2's lease expiry is %v from real now after a -1h bump, want -1h ± %v", d, tol)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	d, ok = waitSkew(t, 10*time.Second, 0, tol, skew)
	t.Logf("after heal: expiry - now = %v", d)
	if !ok {
		t.Errorf("c2's lease expiry is %v from real now after heal, want within %v", d, tol)
	}
	assertClean(t, ctx, e)
}

// A clock running at 3× real time, seen in the lease expiry the real naive-lease candidate
// computes on its clock and writes to Redis: expiry − real now grows by 2 s per real second
// while the rate is on, and the heal brings it back.
func TestChaosClockRateCandidate(t *testing.T) {
	ctx, e := newChaosEnv(t, storekinds.Redis, 0)
	const ttl = 2 * time.Second
	cand, skew := startNaiveLease(t, ctx, e, ttl)
	tol := ttl + 5*time.Second
	if d, ok := waitSkew(t, 30*time.Second, 0, tol, skew); !ok {
		t.Fatalf("before the fault c2's lease expiry is %v from real now (candidate log: %s)", d, cand.LogPath())
	}
	_, _, heal := applyNow(t, ctx, e, "clock:op=rate,rate=3,target=node:c2,at=0s,for=1m", 1)
	// The skew grows linearly: sample it over 8 s and fit the slope of (skew, real time).
	var xs, ys []float64
	t0 := time.Now()
	for time.Since(t0) < 8*time.Second {
		if d, err := skew(); err == nil {
			xs = append(xs, time.Since(t0).Seconds())
			ys = append(ys, d.Seconds())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(xs) < 10 {
		t.Fatalf("only %d samples of c2's lease record in 8 s", len(xs))
	}
	slope := fitSlope(xs, ys)
	rate := slope + 1 // skew = clock − real grows at (rate − 1) s per s
	t.Logf("c2's clock ran at %.3fx real time (%d samples over %.1fs; skew %.1fs → %.1fs)", rate, len(xs), xs[len(xs)-1], ys[0], ys[len(ys)-1])
	if rate < 2.8 || rate > 3.2 {
		t.Errorf("c2's clock ran at %.3fx real time under rate=3, want 3 ± 0.2", rate)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	if d, ok := waitSkew(t, 10*time.Second, 0, tol, skew); !ok {
		t.Errorf("c2's lease expiry is %v from real now after heal, want within %v", d, tol)
	}
	// The heal stepped the wall line back (the lease expiry above) but not the monotonic
	// line: it keeps the drift of at least the 8 s sampled at 3x, and runs at real speed.
	if st := readClockSetting(t, ctx, cand); (st.Rate != 0 && st.Rate != 1) || st.Mono < 16*time.Second {
		t.Errorf("c2's clock file after the heal: %+v, want real speed with the monotonic line kept ≥ 16s ahead", st)
	}
	assertClean(t, ctx, e)
}

// fitSlope is the least-squares slope of ys over xs.
func fitSlope(xs, ys []float64) float64 {
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// ZooKeeper under libfaketime (the environment FaketimeEnv names, monotonic clock left real)
// starts and serves; a +1h bump of the server shows in the ctime it stamps on new znodes, and
// heal undoes it. One node: a 3-node ensemble under libfaketime formed too slowly on the
// loaded shared test machine (see the issue 4 report), because its JVMs' timed waits ended at
// once until FAKETIME_FORCE_MONOTONIC_FIX=0 (TestLibraryClockReach/zookeeper-server).
func TestChaosClockZooKeeper(t *testing.T) {
	ctx, e := newChaosEnvWith(t, storekinds.ZooKeeper, 0, func(ctx context.Context, e *chaosEnv) (*platform.Node, error) {
		cl, err := stores.Launch(ctx, e.eng, e.net, e.runID, stores.Options{
			Kind: storekinds.ZooKeeper, Nodes: 1, Images: e.imgs, LogDir: e.logDir,
			ExtraEnv:   FaketimeEnv("zookeeper"),
			ExtraFiles: []platform.File{{Path: FaketimeFile, Content: []byte(FaketimeInitial), Mode: 0o644}},
		})
		if err != nil {
			return nil, fmt.Errorf("%w\n%s", err, logTails(e.logDir, 15)) // Launch removed its nodes
		}
		e.cluster = cl // the env's cleanup closes the cluster
		return cl.Nodes()[0], nil
	})
	t.Logf("zookeeper ensemble under libfaketime ready in %v", e.cluster.ReadyDuration().Round(time.Millisecond))
	if env := e.store[0].Spec().Env; env["LD_PRELOAD"] == "" || env["FAKETIME_DONT_FAKE_MONOTONIC"] != "1" {
		t.Fatalf("launcher dropped the faketime environment: %v", env)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := e.cluster.WaitReady(wctx)
	cancel()
	if err != nil {
		t.Fatalf("zookeeper under libfaketime does not serve: %v", err)
	}
	eps, err := e.cluster.HostEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// ctime of a fresh znode (stamped by the server's wall clock) minus real now.
	seq := 0
	skew := func() (time.Duration, error) {
		conn, events, err := zk.Connect(eps, 4*time.Second, zk.WithLogger(zkQuiet{}), zk.WithLogInfo(false))
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		for session := false; !session; {
			select {
			case ev := <-events:
				session = ev.State == zk.StateHasSession
			case <-time.After(5 * time.Second):
				return 0, fmt.Errorf("no zookeeper session through %v", eps)
			}
		}
		seq++
		p, err := conn.Create(fmt.Sprintf("/clock-chaos-%d", seq), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err != nil {
			return 0, err
		}
		_, st, err := conn.Exists(p)
		if err != nil {
			return 0, err
		}
		return time.Until(time.UnixMilli(st.Ctime)), nil
	}
	const tol = 5 * time.Second
	if d, ok := waitSkew(t, 10*time.Second, 0, tol, skew); !ok {
		t.Fatalf("znode ctime is %v off real time before any fault", d)
	}
	_, _, heal := applyNow(t, ctx, e, "clock:target=store-node,op=bump,delta=+1h,at=0s,for=1m", 1)
	d, ok := waitSkew(t, 10*time.Second, time.Hour, tol, skew)
	t.Logf("after +1h bump: ctime - now = %v", d)
	if !ok {
		t.Errorf("znode ctime is %v off real time after a +1h bump, want +1h ± %v", d, tol)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	d, ok = waitSkew(t, 10*time.Second, 0, tol, skew)
	t.Logf("after heal: ctime - now = %v", d)
	if !ok {
		t.Errorf("znode ctime is %v off real time after heal", d)
	}
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	err = e.cluster.WaitReady(wctx)
	cancel()
	if err != nil {
		t.Errorf("zookeeper does not serve after the clock heal: %v", err)
	}
	assertClean(t, ctx, e)
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// logTails returns the last n lines of every node log in dir, for failure messages.
func logTails(dir string, n int) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}
