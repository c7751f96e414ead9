package candidates

// raft: github.com/hashicorp/raft among the candidates themselves (store "none"). Every
// candidate is a Raft voter; the TCP transport dials peers by name on the run network, so a
// killed and restarted candidate is found again at its new address. The log lives in memory
// (only configuration and no-op entries are ever written); the term and the vote are kept in
// a small file (raftstate.go) so a restarted voter cannot vote twice in one term.
//
// Leadership comes from the library's notifications (Config.NotifyCh). The fencing token is
// the Raft term the candidate leads in: a voter grants one vote per term and only for a term
// at least its own, a leader needs a majority, and two majorities share a voter, so each
// term has at most one leader and a leader elected after another holds a higher term. The
// term is confirmed after the notification with VerifyLeader (a quorum round) and must read
// the same before and after it, so the token is never a term in which another node leads.
// A deposed leader keeps believing until its leader lease (LeaderLeaseTimeout, TTL/4) finds
// no quorum; its writes in that window carry the old, lower term.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var raftElection = runtime.Spec{
	Name: "raft", Store: storekinds.None,
	Summary: "hashicorp/raft among the candidates (no store); token = the Raft term",
	Steps:   []string{"leader-verified"},
	Timing:  raftTiming,
	New:     newRaftRecipe,
}

// raftTiming maps the run's TTL onto Raft's timers: heartbeat and election timeout TTL/2
// (the library's 1 s defaults at the default TTL 2 s), leader lease TTL/4. A follower times
// out 1-2 heartbeat timeouts after the last contact; pre-vote and vote take a few round
// trips; a split vote costs one more election timeout.
func raftTiming(c contract.Config) runtime.Timing {
	hb := raftHeartbeat(c.LeaseTTL)
	return runtime.Timing{TTL: 2 * hb, Renew: hb / 10, HandoffBound: time.Second, FailoverBound: 4*hb + time.Second}
}

func raftHeartbeat(ttl time.Duration) time.Duration { return max(ttl/2, 50*time.Millisecond) }

type raftNode struct {
	env     runtime.Env
	r       *raft.Raft
	trans   *raft.NetworkTransport
	changed chan struct{} // a leadership notification arrived
	done    chan struct{}

	mu      sync.Mutex
	leading bool
	lose    context.CancelCauseFunc // ends the current term, nil when not leading
}

func newRaftRecipe(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if env.ListenPort == 0 || len(env.Peers) == 0 {
		return nil, fmt.Errorf("raft needs %s and %s (run with --store none)", contract.EnvPeers, contract.EnvListenPort)
	}
	hb := raftHeartbeat(env.LeaseTTL)
	logw := &logfWriter{logf: env.Logf}
	notify := make(chan bool, 16)
	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(env.NodeID)
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = hb, hb
	cfg.LeaderLeaseTimeout = hb / 2
	cfg.CommitTimeout = min(cfg.CommitTimeout, hb/10)
	cfg.SnapshotThreshold = 1 << 40 // the in-memory log is tiny; never snapshot it away
	cfg.NotifyCh = notify
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Info, Output: logw})

	addrs := env.PeerAddrs()
	self, ok := addrs[env.NodeID]
	if !ok {
		return nil, fmt.Errorf("%s does not list %s", contract.EnvPeers, env.NodeID)
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(env.ListenPort))
	if err != nil {
		return nil, fmt.Errorf("listen for peers: %w", err)
	}
	trans := raft.NewNetworkTransportWithLogger(&peerStream{Listener: ln, self: namedAddr(self)}, 3, hb, cfg.Logger)

	stateDir := filepath.Join(os.TempDir(), "splitbrain-raft-"+env.ElectionName+"-"+env.NodeID)
	stable, err := openFileStable(stateDir)
	if err != nil {
		trans.Close()
		return nil, err
	}
	logs := raft.NewInmemStore()
	snaps := raft.NewInmemSnapshotStore()
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		trans.Close()
		return nil, err
	}
	if !existing {
		var servers []raft.Server
		for _, id := range env.PeerIDs() {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addrs[id])})
		}
		if err := raft.BootstrapCluster(cfg, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			trans.Close()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	} else {
		// A restart after a crash: the term and vote survived, the log did not. The leader
		// sends the configuration again with its log.
		env.Logf("raft: restarting with persisted term %d", mustUint64(stable, raftKeyCurrentTerm))
	}
	r, err := raft.NewRaft(cfg, raftFSM{}, logs, stable, snaps, trans)
	if err != nil {
		trans.Close()
		return nil, err
	}
	rr := &raftNode{env: env, r: r, trans: trans, changed: make(chan struct{}, 1), done: make(chan struct{})}
	go rr.watch(notify)
	return rr, nil
}

// watch follows the library's leadership notifications. A false ends the current term at
// once; a true wakes Campaign, which confirms the term before it reports it.
func (rr *raftNode) watch(notify <-chan bool) {
	for {
		select {
		case <-rr.done:
			return
		case v := <-notify:
			rr.mu.Lock()
			rr.leading = v
			if !v && rr.lose != nil {
				rr.lose(errors.New("raft: leadership lost (notification)"))
				rr.lose = nil
			}
			rr.mu.Unlock()
			select {
			case rr.changed <- struct{}{}:
			default:
			}
		}
	}
}

func (rr *raftNode) Campaign(ctx context.Context) (runtime.Term, error) {
	for {
		rr.mu.Lock()
		leading := rr.leading
		rr.mu.Unlock()
		if leading {
			if term, ok := rr.confirm(ctx); ok {
				return term, nil
			}
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-rr.changed:
		case <-time.After(rr.env.Timing.Renew):
		}
	}
}

// confirm reads the term, checks with a quorum that this node still leads, and reads the
// term again: equal reads mean the node led in exactly that term.
func (rr *raftNode) confirm(ctx context.Context) (runtime.Term, bool) {
	before := rr.r.CurrentTerm()
	if err := waitFuture(ctx, rr.r.VerifyLeader()); err != nil {
		return runtime.Term{}, false
	}
	rr.env.Step("leader-verified") // a quorum answered; the term is read again next
	term := rr.r.CurrentTerm()
	if term != before || rr.r.State() != raft.Leader {
		return runtime.Term{}, false
	}
	lost, lose := context.WithCancelCause(context.Background())
	rr.mu.Lock()
	if !rr.leading {
		rr.mu.Unlock()
		lose(nil)
		return runtime.Term{}, false
	}
	rr.lose = lose
	rr.mu.Unlock()
	valid := func() error {
		if rr.r.State() != raft.Leader {
			return fmt.Errorf("raft: no longer leader (state %s)", rr.r.State())
		}
		if t := rr.r.CurrentTerm(); t != term {
			return fmt.Errorf("raft: term moved from %d to %d", term, t)
		}
		return nil
	}
	return runtime.Term{Token: int64(term), Lost: lost, Valid: valid}, true
}

// Resign hands leadership to the most up-to-date follower (TimeoutNow), so the next leader
// is elected within round trips instead of an election timeout.
func (rr *raftNode) Resign(ctx context.Context) error {
	rr.mu.Lock()
	if rr.lose != nil {
		rr.lose(errors.New("raft: resigned"))
		rr.lose = nil
	}
	rr.mu.Unlock()
	if rr.r.State() != raft.Leader {
		return nil
	}
	err := waitFuture(ctx, rr.r.LeadershipTransfer())
	if errors.Is(err, raft.ErrNotLeader) {
		return nil
	}
	return err
}

func (rr *raftNode) Close() error {
	err := rr.r.Shutdown().Error()
	close(rr.done)
	return errors.Join(err, rr.trans.Close())
}

func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// raftFSM applies nothing: the election is all the recipe uses Raft for.
type raftFSM struct{}

func (raftFSM) Apply(*raft.Log) any                  { return nil }
func (raftFSM) Snapshot() (raft.FSMSnapshot, error)  { return raftFSM{}, nil }
func (raftFSM) Restore(rc io.ReadCloser) error       { return rc.Close() }
func (raftFSM) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (raftFSM) Release()                             {}

// peerStream is Raft's stream layer over plain TCP, advertising the peer name from
// SPLITBRAIN_PEERS rather than an IP, since a restarted container may get another one.
type peerStream struct {
	net.Listener
	self namedAddr
}

func (s *peerStream) Addr() net.Addr { return s.self }
func (s *peerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

// logfWriter turns the library's log lines into the candidate's log.
type logfWriter struct{ logf func(string, ...any) }

func (w *logfWriter) Write(p []byte) (int, error) {
	w.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
