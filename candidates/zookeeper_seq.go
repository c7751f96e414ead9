package candidates

// zookeeper-seq: an ephemeral sequential znode per candidate under /splitbrain/<election>;
// the lowest sequence leads, every other candidate watches only its predecessor (no herd).
// Token = czxid of our znode (global zxid, monotone, >= 1).
//
// We step down on Disconnected, not only on Expired: go-zookeeper reports Expired only after
// it reconnects, so a leader cut off from the ensemble would otherwise keep believing for the
// whole partition while the server expires its session after the timeout and another candidate
// takes over. Disconnected arrives at 2/3 of the session timeout, before the server can expire
// us. The price is a spurious handoff when a ZooKeeper server restarts within the timeout.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var zookeeperSeq = runtime.Spec{
	Name: "zookeeper-seq", Store: storekinds.ZooKeeper,
	Summary: "ZooKeeper ephemeral sequential znode, predecessor watch; token = czxid",
	Steps:   []string{"lock-acquired"},
	Timing: func(c contract.Config) runtime.Timing {
		return runtime.Timing{TTL: c.LeaseTTL, Renew: c.LeaseTTL / 3,
			// Crash: session expiry is checked in tickTime buckets (0.5 s in our ensemble).
			HandoffBound: time.Second, FailoverBound: c.LeaseTTL + 2*time.Second}
	},
	New: newZooKeeperSeq,
}

type zkRecipe struct {
	env    runtime.Env
	dir    string
	conn   *zk.Conn
	sessMu sync.Mutex
	sess   context.Context // done when the current connection disconnected or expired
	node   string          // our znode path, "" when none
}

type zkLog struct{ logf func(string, ...any) }

func (l zkLog) Printf(f string, a ...any) { l.logf("zk: "+f, a...) }

func newZooKeeperSeq(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	return &zkRecipe{env: env, dir: "/splitbrain/" + env.ElectionName}, nil
}

// connect opens a new session and returns once it is established.
func (r *zkRecipe) connect(ctx context.Context) error {
	has := make(chan struct{})
	sess, end := context.WithCancelCause(context.Background())
	var once sync.Once
	conn, _, err := zk.Connect(r.env.Endpoints, r.env.Timing.TTL, zk.WithLogger(zkLog{r.env.Logf}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(has) })
			case zk.StateDisconnected, zk.StateExpired:
				end(fmt.Errorf("zookeeper %s", strings.TrimPrefix(ev.State.String(), "State")))
			}
		}))
	if err != nil {
		return fmt.Errorf("connect %v: %w", r.env.Endpoints, err)
	}
	select {
	case <-has:
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	case <-time.After(r.env.Timing.TTL + 2*time.Second):
		conn.Close()
		return fmt.Errorf("no session with %v within %s", r.env.Endpoints, r.env.Timing.TTL+2*time.Second)
	}
	r.conn = conn
	r.sessMu.Lock()
	r.sess = sess
	r.sessMu.Unlock()
	return nil
}

func (r *zkRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	if r.conn == nil || r.sess.Err() != nil {
		r.drop()
		if err := r.connect(ctx); err != nil {
			return runtime.Term{}, err
		}
	}
	for _, p := range []string{"/splitbrain", r.dir} {
		if _, err := r.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return runtime.Term{}, fmt.Errorf("create %s: %w", p, err)
		}
	}
	callT := history.Now() // the sequential znode is the acquire and its czxid the token
	path, err := r.conn.CreateProtectedEphemeralSequential(r.dir+"/n-", []byte(r.env.NodeID), zk.WorldACL(zk.PermAll))
	if err != nil {
		return runtime.Term{}, fmt.Errorf("create candidate znode: %w", err)
	}
	r.node = path
	me := path[strings.LastIndex(path, "/")+1:]
	for {
		kids, _, err := r.conn.Children(r.dir)
		if err != nil {
			return runtime.Term{}, fmt.Errorf("list candidates: %w", err)
		}
		sort.Slice(kids, func(i, j int) bool { return zkSeq(kids[i]) < zkSeq(kids[j]) })
		idx := -1
		for i, k := range kids {
			if k == me {
				idx = i
			}
		}
		if idx < 0 {
			return runtime.Term{}, fmt.Errorf("own znode %s vanished (session expired?)", path)
		}
		if idx == 0 {
			r.env.Step("lock-acquired") // lowest znode; its existence is confirmed next
			break
		}
		pred := r.dir + "/" + kids[idx-1]
		ok, _, ch, err := r.conn.ExistsW(pred)
		if err != nil {
			return runtime.Term{}, fmt.Errorf("watch predecessor: %w", err)
		}
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-r.sess.Done():
			return runtime.Term{}, fmt.Errorf("while waiting: %w", context.Cause(r.sess))
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		}
	}
	ok, stat, ch, err := r.conn.ExistsW(path)
	if err != nil || !ok {
		return runtime.Term{}, fmt.Errorf("confirm own znode %s: exists=%v err=%v", path, ok, err)
	}
	lost, lose := context.WithCancelCause(context.Background())
	sess := r.sess
	go func() {
		select {
		case <-sess.Done():
			lose(context.Cause(sess))
		case ev := <-ch:
			lose(fmt.Errorf("own znode event %s", ev.Type))
		}
	}()
	return runtime.Term{Token: stat.Czxid, Lost: lost, CallT: callT}, nil
}

// zkSeq is the 10-digit sequence suffix of a sequential znode name.
func zkSeq(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

func (r *zkRecipe) Resign(ctx context.Context) error {
	if r.conn == nil {
		return nil
	}
	if r.sess.Err() != nil {
		// The session is unusable; closing it lets the server drop our znode at expiry.
		r.drop()
		return nil
	}
	if r.node != "" {
		err := r.conn.Delete(r.node, -1)
		r.node = ""
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			r.drop() // closing the session deletes the ephemeral node
			return fmt.Errorf("delete own znode: %w", err)
		}
	}
	return nil
}

func (r *zkRecipe) drop() {
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	r.node = ""
}

func (r *zkRecipe) Close() error {
	r.drop()
	return nil
}
