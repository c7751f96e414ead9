// Package zkelect is the ZooKeeper leader-election recipe (an ephemeral sequential znode per
// candidate, the lowest leads, each waiter watches its predecessor) with go-zookeeper/zk, as
// the ZooKeeper recipes page describes it. Two corpus entries build on it; each turns on one
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
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// Options selects the mistakes.
type Options struct {
	// IgnoreDisconnect keeps leading through a Disconnected session and ends the term only on
	// Expired (which go-zookeeper reports after it reconnects) or the own znode's deletion:
	// Curator's leader recipes treated SUSPENDED as harmless (CURATOR-460).
	IgnoreDisconnect bool
	// TrustPredecessorDelete takes the lead as soon as the watched predecessor is deleted,
	// without listing the children again to check that no lower znode is left.
	TrustPredecessorDelete bool
}

type quiet struct{}

func (quiet) Printf(f string, a ...any) { fmt.Fprintf(os.Stderr, "zk: "+f+"\n", a...) }

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
	disconnected context.Context
	expired      context.Context
}

func connect(ctx context.Context, env candidate.Env) (*session, error) {
	has := make(chan struct{})
	disc, onDisc := context.WithCancelCause(context.Background())
	exp, onExp := context.WithCancelCause(context.Background())
	var once sync.Once
	conn, _, err := zk.Connect(env.Endpoints, env.TTL, zk.WithLogger(quiet{}),
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
		return &session{conn: conn, disconnected: disc, expired: exp}, nil
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
		return ""
	})
	candidate.SteppedDown(reason)
	if ended.Err() == nil {
		s.conn.Delete(path, -1)
	}
	return nil
}
