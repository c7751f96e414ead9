// Package zkelect is the ZooKeeper leader-election recipe (an ephemeral sequential znode per
// candidate, the lowest leads, each waiter watches its predecessor) with go-zookeeper/zk, as
// the ZooKeeper recipes page describes it. Two published-bug entries build on it; each turns on one
// published mistake with its Options, everything else stays the same.
package zkelect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// Options selects the mistakes.
type Options struct {
	// IgnoreDisconnect keeps leading through a Disconnected session and ends the term only on
	// Expired (which go-zookeeper reports after it reconnects) or the own znode's deletion:
	// Curator's leader recipes treated SUSPENDED as harmless (CURATOR-460). Without it the
	// term also ends at the leader's own deadline (ownDeadline), which does not wait for the
	// library to notice the disconnection.
	IgnoreDisconnect bool
	// TrustPredecessorDelete takes the lead as soon as the watched predecessor is deleted,
	// without listing the children again to check that no lower znode is left.
	TrustPredecessorDelete bool
}

// zkLog passes go-zookeeper's log to stderr and keeps the session timeout the server
// negotiated, which go-zookeeper reports only in its log line after authentication.
type zkLog struct{ negotiated atomic.Int64 } // ms, 0 until known

func (l *zkLog) Printf(f string, a ...any) {
	if f == "authenticated: id=%d, timeout=%d" && len(a) == 2 {
		if ms, ok := a[1].(int32); ok && ms > 0 {
			l.negotiated.Store(int64(ms))
		}
	}
	fmt.Fprintf(os.Stderr, "zk: "+f+"\n", a...)
}

// timeout is the session timeout to count the own deadline with: the negotiated one when
// known, never more than the one asked for (the server may only have raised it).
func (l *zkLog) timeout(asked time.Duration) time.Duration {
	if ms := l.negotiated.Load(); ms > 0 {
		return min(asked, time.Duration(ms)*time.Millisecond)
	}
	return asked
}

// Run campaigns and leads until SIGTERM.
func Run(o Options) {
	env := candidate.Load("zookeeper")
	ctx, stop := candidate.Signals()
	defer stop()
	w := candidate.NewWriter(env)
	dir := "/splitbrain-corpus/" + env.Election
	for ctx.Err() == nil {
		candidate.Campaigning()
		if err := term(ctx, env, o, dir, w); err != nil && ctx.Err() == nil {
			candidate.Error(err.Error())
			candidate.Sleep(ctx, env.Retry)
		}
	}
	os.Exit(0)
}

// session is one ZooKeeper session: disconnected ends at Disconnected or Expired, expired
// only at Expired (which go-zookeeper reports once it reaches a server again).
type session struct {
	conn         *zk.Conn
	log          *zkLog
	disconnected context.Context
	expired      context.Context
}

func connect(ctx context.Context, env candidate.Env) (*session, error) {
	has := make(chan struct{})
	disc, onDisc := context.WithCancelCause(context.Background())
	exp, onExp := context.WithCancelCause(context.Background())
	var once sync.Once
	log := &zkLog{}
	conn, _, err := zk.Connect(env.Endpoints, env.TTL, zk.WithLogger(log),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(has) })
			case zk.StateDisconnected:
				onDisc(errors.New("zookeeper session disconnected"))
			case zk.StateExpired:
				onDisc(errors.New("zookeeper session expired"))
				onExp(errors.New("zookeeper session expired"))
			}
		}))
	if err != nil {
		return nil, err
	}
	select {
	case <-has:
		return &session{conn: conn, log: log, disconnected: disc, expired: exp}, nil
	case <-ctx.Done():
	case <-time.After(env.TTL + 2*time.Second):
	}
	conn.Close()
	return nil, fmt.Errorf("no zookeeper session with %v", env.Endpoints)
}

// term is one campaign on a fresh session, and the tenure if it wins.
func term(ctx context.Context, env candidate.Env, o Options, dir string, w *candidate.Writer) error {
	s, err := connect(ctx, env)
	if err != nil {
		return err
	}
	defer s.conn.Close() // closing the session deletes our znode
	var own *ownDeadline
	if !o.IgnoreDisconnect {
		// The probes run from the start of the session, so that a candidate that wins has
		// its deadline already (two answered probes) and announces its term without delay.
		own = newOwnDeadline(func() time.Duration { return s.log.timeout(env.TTL) })
		pctx, stopProbes := context.WithCancel(ctx)
		defer stopProbes() // not waited for: a sync queued while disconnected ends at the Close
		go func() {
			for {
				own.probe(s.conn)
				if !candidate.Sleep(pctx, own.period()) {
					return
				}
			}
		}()
	}
	for _, p := range []string{"/splitbrain-corpus", dir} {
		if _, err := s.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	callT := candidate.Monotonic()
	path, err := s.conn.Create(dir+"/n-", []byte(env.Node), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return fmt.Errorf("create candidate znode: %w", err)
	}
	me := path[strings.LastIndex(path, "/")+1:]
	// While waiting, any loss of the session ends the campaign: it starts over on a new one.
	for lowest := false; !lowest; {
		kids, _, err := s.conn.Children(dir)
		if err != nil {
			return fmt.Errorf("list candidates: %w", err)
		}
		sort.Strings(kids) // one parent: the 10-digit suffixes sort like the names
		idx := slices.Index(kids, me)
		if idx < 0 {
			return fmt.Errorf("own znode %s is gone", path)
		}
		if idx == 0 {
			break
		}
		ok, _, ch, err := s.conn.ExistsW(dir + "/" + kids[idx-1])
		if err != nil {
			return fmt.Errorf("watch predecessor: %w", err)
		}
		if !ok {
			continue
		}
		select {
		case <-ch:
			// BUG (TrustPredecessorDelete): the predecessor is gone, but a lower znode may
			// still be there; the recipe says to list the children again.
			lowest = o.TrustPredecessorDelete
		case <-s.disconnected.Done():
			return fmt.Errorf("while waiting: %w", context.Cause(s.disconnected))
		case <-ctx.Done():
			return nil
		}
	}
	ok, stat, ownWatch, err := s.conn.ExistsW(path)
	if err != nil || !ok {
		return fmt.Errorf("confirm own znode %s: exists=%v err=%v", path, ok, err)
	}
	if ctx.Err() != nil {
		return nil // won after SIGTERM: the deferred close gives it back unannounced (R10)
	}
	if own != nil {
		if err := own.established(ctx, s.disconnected); err != nil {
			return err
		}
	}
	ended := s.disconnected
	if o.IgnoreDisconnect {
		ended = s.expired // BUG (IgnoreDisconnect): a SUSPENDED session is not a lost one
	}
	var lost sync.Map
	go func() {
		select {
		case <-ended.Done():
			lost.Store("why", context.Cause(ended).Error())
		case ev := <-ownWatch:
			lost.Store("why", "own znode event "+ev.Type.String())
		case <-ctx.Done():
		}
	}()
	candidate.Elected(stat.Czxid, callT)
	reason := w.Lead(ctx, stat.Czxid, func() string {
		if why, ok := lost.Load("why"); ok {
			return why.(string)
		}
		if own != nil {
			return own.lost(time.Now())
		}
		return ""
	})
	candidate.SteppedDown(reason)
	if ended.Err() == nil {
		s.conn.Delete(path, -1)
	}
	return nil
}

// ownDeadline is the fixed variant's end of term, counted on the leader's own clock from
// answered round trips to the ensemble's leader, so that it passes before the server can
// expire the session however late go-zookeeper reports Disconnected (0.45 s after the
// successor's election, once, under a halves partition on a loaded host: docs/findings.md).
//
// Why the *previous* answered probe: a ZooKeeper session is expired by the ensemble's leader,
// a session timeout after the last touch *it* saw, rounded up to a tick. A client's request
// to a follower touches the session only on that follower, which reports it to the leader in
// its reply to the leader's next ping (every tickTime/2). Each probe is a sync, which the
// follower forwards to the leader on the same ordered connection as its ping replies, so an
// answered sync k proves the leader read everything the follower sent before it. Probes are
// at least timeout/4 apart (a sleep after each answer), and the server takes session
// timeouts of 2 ticks and up, so a leader ping lies between probe k-1's arrival and probe
// k's: the leader touched the session after probe k-1 was sent, and cannot expire it before
// that send time + the timeout. A sync answered by an isolated follower is impossible (it
// must reach the leader), which a plain read would not prove: a follower cut off from the
// leader answers reads for syncLimit ticks.
type ownDeadline struct {
	timeout func() time.Duration
	mu      sync.Mutex
	prev    time.Time     // send time of the last answered probe
	end     time.Time     // zero until two probes were answered
	moved   chan struct{} // closed (and replaced) each time end moves
}

func newOwnDeadline(timeout func() time.Duration) *ownDeadline {
	return &ownDeadline{timeout: timeout, moved: make(chan struct{})}
}

func (d *ownDeadline) period() time.Duration { return d.timeout() / 4 }

// probe sends one sync and records it if it is answered.
func (d *ownDeadline) probe(conn *zk.Conn) {
	sent := time.Now()
	if _, err := conn.Sync("/"); err == nil {
		d.answered(sent)
	}
}

// answered moves the deadline to the previous answered probe's send time + the timeout,
// less 1 % for the clock rate, and keeps sent as the new previous one.
func (d *ownDeadline) answered(sent time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.prev.IsZero() {
		if e := d.prev.Add(d.timeout() * 99 / 100); e.After(d.end) {
			d.end = e
			close(d.moved)
			d.moved = make(chan struct{})
		}
	}
	d.prev = sent
}

// lost is "" while the deadline is ahead of now.
func (d *ownDeadline) lost(now time.Time) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.end) {
		return ""
	}
	return fmt.Sprintf("own deadline passed: no sync answered for long enough (previous answered probe + %v session timeout)", d.timeout())
}

// established waits until the deadline is ahead (a fresh session has answered fewer than two
// probes), or the session is disconnected or ctx ends.
func (d *ownDeadline) established(ctx context.Context, disconnected context.Context) error {
	for {
		d.mu.Lock()
		ahead, moved := time.Now().Before(d.end), d.moved
		d.mu.Unlock()
		if ahead {
			return nil
		}
		select {
		case <-moved:
		case <-disconnected.Done():
			return fmt.Errorf("won, but: %w", context.Cause(disconnected))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
