// Command none is an example candidate for --store none, written from docs/candidates.md
// section 8 ("none"): with no store, the candidates grant leadership themselves. Every
// candidate is an acceptor that grants a lease of one TTL to the highest ballot it has seen
// once the previous lease it granted has run out; a candidate whose ballot a majority of
// the peers granted leads until TTL after it sent the request, renewing with the same ballot.
// Two majorities share an acceptor, which granted the later ballot only after promising it
// was higher, so the ballot is a fencing token that grows with every grant (R8). The highest
// ballot an acceptor promised is kept in a file, since a killed candidate restarts in the
// same container.
//
//	CGO_ENABLED=0 go build -o /tmp/none-candidate ./examples/stores/none
//	splitbrain run --store none --candidate-cmd /tmp/none-candidate --nemesis isolate-leader --time 30s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

type request struct {
	Ballot  int64 `json:"ballot"`
	Release bool  `json:"release,omitempty"` // the holder resigns: end its lease now
}

type reply struct {
	Granted  bool  `json:"granted"`
	Promised int64 `json:"promised"`       // the highest ballot this acceptor has granted
	Busy     bool  `json:"busy,omitempty"` // refused: the lease of another ballot still runs
}

// acceptor is this candidate's vote.
type acceptor struct {
	mu       sync.Mutex
	file     string
	promised int64
	leaseEnd time.Time // monotonic; the lease of ballot promised runs until then
	ttl      time.Duration
}

func newAcceptor(file string, ttl time.Duration) *acceptor {
	a := &acceptor{file: file, ttl: ttl}
	if b, err := os.ReadFile(file); err == nil {
		a.promised, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	// After a restart the lease granted last may still run: honour it for a full TTL.
	a.leaseEnd = time.Now().Add(ttl)
	return a
}

func (a *acceptor) handle(req request) reply {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	switch {
	case req.Release && req.Ballot == a.promised:
		a.leaseEnd = now
		return reply{Promised: a.promised}
	case req.Release:
		return reply{Promised: a.promised}
	case req.Ballot == a.promised: // renewal by the current holder
		a.leaseEnd = now.Add(a.ttl)
		return reply{Granted: true, Promised: a.promised}
	case req.Ballot > a.promised && !now.Before(a.leaseEnd):
		// Promise first, durably: a restarted acceptor must never grant a lower ballot.
		tmp := a.file + ".tmp"
		if os.WriteFile(tmp, []byte(strconv.FormatInt(req.Ballot, 10)), 0o644) != nil || os.Rename(tmp, a.file) != nil {
			return reply{Promised: a.promised}
		}
		a.promised, a.leaseEnd = req.Ballot, now.Add(a.ttl)
		return reply{Granted: true, Promised: a.promised}
	}
	return reply{Promised: a.promised, Busy: now.Before(a.leaseEnd)}
}

func (a *acceptor) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(a.ttl / 4))
			var req request
			line, err := bufio.NewReader(conn).ReadBytes('\n')
			if err != nil || json.Unmarshal(line, &req) != nil {
				return
			}
			b, _ := json.Marshal(a.handle(req))
			conn.Write(append(b, '\n'))
		}()
	}
}

type proposer struct {
	peers   []string // host:port, the host is the node id; dialled by name every time
	rank    int64    // 1-based position of this candidate in the peer list
	timeout time.Duration
}

// ask sends req to every peer at once and counts the grants and the refusals for a running
// lease; it also returns the highest ballot any peer reported.
func (p *proposer) ask(req request) (grants, busy int, highest int64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, peer := range p.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := p.call(peer, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				return
			}
			if rep.Granted {
				grants++
			}
			if rep.Busy {
				busy++
			}
			highest = max(highest, rep.Promised)
		}()
	}
	wg.Wait()
	return grants, busy, highest
}

func (p *proposer) call(peer string, req request) (reply, error) {
	var rep reply
	conn, err := net.DialTimeout("tcp", peer, p.timeout) // resolves the name each time (R12)
	if err != nil {
		return rep, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(p.timeout)) // R16
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return rep, err
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal(line, &rep)
}

// next is the smallest ballot above highest that belongs to this candidate: ballots are
// unique per candidate (ballot mod N = rank mod N).
func (p *proposer) next(highest int64) int64 {
	n := int64(len(p.peers))
	return (highest/n+1)*n + p.rank%n
}

func main() {
	env := candidate.Load("none")
	ctx, stop := candidate.Signals()
	defer stop()
	// A peer is host:port with the node id as host, or id=host:port (candidates on one machine).
	var ids, addrs []string
	for _, peer := range env.Peers {
		id, addr, named := strings.Cut(peer, "=")
		if !named {
			addr = peer
			id, _, _ = strings.Cut(peer, ":")
		}
		ids, addrs = append(ids, id), append(addrs, addr)
	}
	rank := slices.Index(ids, env.Node)
	if rank < 0 {
		fmt.Fprintf(os.Stderr, "none candidate: SPLITBRAIN_PEERS=%s does not list %s\n", strings.Join(env.Peers, ","), env.Node)
		os.Exit(64)
	}
	acc := newAcceptor(filepath.Join(os.TempDir(), "example-none-"+env.Election+"-"+env.Node), env.TTL)
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", env.ListenPort))
	if err != nil {
		fmt.Fprintln(os.Stderr, "none candidate: listen:", err)
		os.Exit(1)
	}
	go acc.serve(ln)
	p := &proposer{peers: addrs, rank: int64(rank + 1), timeout: env.TTL / 4}
	majority := len(env.Peers)/2 + 1
	w := candidate.NewWriter(env)
	var highest int64
	for ctx.Err() == nil {
		candidate.Campaigning()
		var ballot, callT int64
		var sent time.Time
		splits := 0
		for {
			// A new ballot only when outbid: asking again with the same one re-grants it
			// where it was promised, instead of raising promises round after round.
			if ballot <= highest {
				ballot = p.next(highest)
			}
			sent, callT = time.Now(), candidate.Monotonic()
			grants, busy, h := p.ask(request{Ballot: ballot})
			if h != ballot { // our own ballot reported back is not an outbid
				highest = max(highest, h)
			}
			if grants >= majority {
				break
			}
			if grants > 0 { // free the acceptors that granted a ballot that lost
				p.ask(request{Ballot: ballot, Release: true})
			}
			// A running lease: poll again. Votes split among rivals: back off exponentially
			// with jitter, or rivals whose asks overlap split them again and again.
			wait := env.Retry
			if busy >= majority {
				splits = 0
			} else {
				splits++
				wait += rand.N(min(env.TTL/2, env.Retry<<min(splits, 10)))
			}
			if !candidate.Sleep(ctx, wait) {
				ballot = 0
				break
			}
		}
		if ballot == 0 {
			break // SIGTERM while campaigning
		}
		if ctx.Err() != nil { // won after SIGTERM: give it back unannounced (R10)
			p.ask(request{Ballot: ballot, Release: true})
			break
		}
		dl := &candidate.Deadline{}
		dl.Extend(sent, env.TTL-env.TTL/100) // acceptors count the TTL from receipt, later
		candidate.Elected(ballot, callT)
		stopRenew := candidate.Every(ctx, env.Renew, func(context.Context) {
			sent := time.Now()
			grants, _, h := p.ask(request{Ballot: ballot})
			if grants >= majority {
				dl.Extend(sent, env.TTL-env.TTL/100)
			} else if h > ballot {
				dl.Lose(fmt.Sprintf("a majority moved on to ballot %d", h))
			}
		})
		reason := w.Lead(ctx, ballot, dl.Lost)
		stopRenew()
		candidate.SteppedDown(reason)
		p.ask(request{Ballot: ballot, Release: true})
		highest = max(highest, ballot) // the next term needs a higher ballot (R8)
	}
	os.Exit(0)
}
