// Command consul is an example candidate for --store consul, written from
// docs/candidates.md section 8 ("Consul"): a session of its own (TTL = the run's TTL, no
// health checks) and KV acquire on a key, polled; the key's LockIndex is the token. It talks
// to one Consul server at a time (there is no local agent) and moves to the next on failure.
//
//	CGO_ENABLED=0 go build -o /tmp/consul-candidate ./examples/stores/consul
//	splitbrain run --store consul --candidate-cmd /tmp/consul-candidate --nemesis pause-leader --time 30s
//
// Built with -tags broken it leaves consul/api's default address (address_broken.go), the
// mistake `splitbrain candidate check` reports as consul-default-address.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// servers hands out one client per Consul server and moves on when one fails.
type servers struct {
	mu      sync.Mutex
	clients []*api.Client
	next    int
}

func (s *servers) client() *api.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[s.next%len(s.clients)]
}

// failed moves to the next server unless another goroutine already did.
func (s *servers) failed(c *api.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients[s.next%len(s.clients)] == c {
		s.next++
	}
}

func main() {
	env := candidate.Load("consul")
	ctx, stop := candidate.Signals()
	defer stop()
	ss := &servers{}
	for i, ep := range env.Endpoints {
		cli, err := api.NewClient(&api.Config{
			Address: address(ep), // not the default 127.0.0.1:8500: no agent runs next to the candidate
			Scheme:  "http",
			// consul/api's client has no timeout; a server without quorum holds calls 7 s.
			HttpClient: &http.Client{Timeout: env.TTL / 2},
			WaitTime:   env.TTL / 4,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "consul client:", err)
			os.Exit(64)
		}
		ss.clients = append(ss.clients, cli)
		if env.Node != "" && i == 0 {
			ss.next = int(env.Node[len(env.Node)-1]) // spread candidates over the servers
		}
	}
	key := "example-consul/" + env.Election
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		session, token, sent, callT := campaign(ctx, ss, env, key)
		if session == "" {
			break // SIGTERM while waiting
		}
		if ctx.Err() != nil { // won after SIGTERM: give it back unannounced (R10)
			release(ss, key, session)
			break
		}
		dl := &candidate.Deadline{}
		// Consul invalidates a session 2 × TTL after the last renewal it saw: stopping TTL
		// after the send is well before anybody else can take the key.
		dl.Extend(sent, env.TTL)
		candidate.Elected(token, callT)
		stopRenew := candidate.Every(ctx, env.Renew, func(ctx context.Context) {
			c := ss.client()
			sent := time.Now()
			entry, _, err := c.Session().Renew(session, (&api.WriteOptions{}).WithContext(ctx))
			switch {
			case err == nil && entry == nil:
				dl.Lose("session gone: Consul invalidated it")
			case err == nil:
				dl.Extend(sent, env.TTL)
			case ctx.Err() == nil:
				ss.failed(c)
				candidate.Error("renew: " + err.Error()) // the deadline decides
			}
		})
		reason := w.Lead(ctx, token, dl.Lost)
		stopRenew()
		candidate.SteppedDown(reason)
		release(ss, key, session)
	}
	os.Exit(0)
}

// campaign creates a session and polls KV acquire with it every retry interval until it
// holds the key: the session, the key's LockIndex, the acquire's send time and its
// CLOCK_MONOTONIC. An empty session means ctx ended.
func campaign(ctx context.Context, ss *servers, env candidate.Env, key string) (string, int64, time.Time, int64) {
	session := ""
	var renewed time.Time
	for {
		c := ss.client()
		var err error
		if session == "" {
			// No health checks: the default ties the session to the serf health of the
			// server we talk to, not to this process. LockDelay defaults to 15 s.
			session, _, err = c.Session().CreateNoChecks(&api.SessionEntry{
				Name: "example-" + env.Node, TTL: env.TTL.String(), LockDelay: env.TTL, Behavior: api.SessionBehaviorRelease,
			}, nil)
			renewed = time.Now()
		}
		if err == nil {
			sent, callT := time.Now(), candidate.Monotonic()
			var won bool
			won, _, err = c.KV().Acquire(&api.KVPair{Key: key, Session: session}, nil)
			if err == nil && won {
				// The token: the key's LockIndex, read back consistently, ours only if the
				// key still names our session.
				var pair *api.KVPair
				pair, _, err = c.KV().Get(key, &api.QueryOptions{RequireConsistent: true})
				if err == nil && pair != nil && pair.Session == session && pair.LockIndex > 0 {
					return session, int64(pair.LockIndex), sent, callT
				}
				if err == nil {
					err = errors.New("acquired, but the key names another session")
				}
			} else if err == nil {
				// Refused: held by another session, or its lock-delay. Keep ours alive.
				if time.Since(renewed) >= env.Renew {
					entry, _, rerr := c.Session().Renew(session, nil)
					switch {
					case rerr == nil && entry == nil:
						session = "" // invalidated: make a new one
					case rerr == nil:
						renewed = time.Now()
					}
				}
			}
		}
		if err != nil {
			// Start over with a new session on the next server: the old one may be gone
			// (invalidated while we could not renew it), and expires by itself if not.
			ss.failed(c)
			candidate.Error(err.Error())
			session = ""
		}
		if !candidate.Sleep(ctx, env.Retry) {
			if session != "" {
				release(ss, key, session) // in case the last acquire won after all
			}
			return "", 0, time.Time{}, 0
		}
	}
}

// release gives the key back (no lock-delay after a release) and destroys the session.
func release(ss *servers, key, session string) {
	c := ss.client()
	if _, _, err := c.KV().Release(&api.KVPair{Key: key, Session: session}, nil); err != nil {
		candidate.Error("release: " + err.Error())
	}
	c.Session().Destroy(session, nil)
}
