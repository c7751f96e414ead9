package candidates

// naive-lease (negative control): the lease sample from the design docs. GET the leader
// record; if it is absent or expired by this candidate's own clock, INCR a token and SET the
// record {holder, expiry on the candidate clock, token}. Check and set are separate commands,
// so two candidates can both see "expired" and both lead; renew is a blind SET after a GET; a
// clock that runs ahead makes a follower take over a live lease. A resigning leader publishes
// "released" so followers need not wait for their next poll: a common courtesy that wakes
// every follower at once and so makes the check-then-set race land on most handoffs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var naiveLease = runtime.Spec{
	Name: "naive-lease", Store: storekinds.Redis, ClockAware: true, Negative: true,
	Summary: "NEGATIVE CONTROL: GET record, SET it if expired by the local clock (not atomic)",
	Steps:   []string{"token-drawn", "lock-acquired"},
	Timing:  redisTiming,
	New:     newNaiveLease,
}

type naiveRecord struct {
	Holder string `json:"holder"`
	Expiry int64  `json:"expiry"` // candidate-clock Unix ns
	Token  int64  `json:"token"`
}

type naiveRecipe struct {
	env      runtime.Env
	rdb      *redis.Client
	key      string
	fenceKey string
	releases *redis.PubSub // "released" notices from resigning leaders
	mine     naiveRecord   // zero when not holding
	stopMon  func()        // ends the term's renew monitor
}

func newNaiveLease(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	rdb, err := newRedisClient(env)
	if err != nil {
		return nil, err
	}
	r := &naiveRecipe{env: env, rdb: rdb, key: "splitbrain:naive:" + env.ElectionName,
		fenceKey: "splitbrain:naive-fence:" + env.ElectionName}
	r.releases = rdb.Subscribe(ctx, r.releaseChannel())
	// Wait for the subscription to be confirmed, or a release published before it is lost.
	if _, err := r.releases.Receive(ctx); err != nil {
		r.releases.Close()
		rdb.Close()
		return nil, fmt.Errorf("subscribe to %s: %w", r.releaseChannel(), err)
	}
	return r, nil
}

func (r *naiveRecipe) releaseChannel() string {
	return "splitbrain:naive-released:" + r.env.ElectionName
}

func (r *naiveRecipe) read(ctx context.Context) (*naiveRecord, error) {
	b, err := r.rdb.Get(ctx, r.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec naiveRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, nil // garbage counts as no leader
	}
	return &rec, nil
}

func (r *naiveRecipe) write(ctx context.Context, rec naiveRecord) error {
	b, _ := json.Marshal(rec)
	return r.rdb.Set(ctx, r.key, b, 0).Err()
}

func (r *naiveRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	t := r.env.Timing
	var callT int64
	for {
		callT = history.Now()
		cur, err := r.read(ctx)
		if err != nil {
			return runtime.Term{}, fmt.Errorf("get leader record: %w", err)
		}
		now := r.env.Clock.Wall()
		if cur == nil || cur.Expiry < now.UnixNano() {
			token, err := r.rdb.Incr(ctx, r.fenceKey).Result()
			if err != nil {
				return runtime.Term{}, fmt.Errorf("incr token: %w", err)
			}
			r.env.Step("token-drawn")
			rec := naiveRecord{Holder: r.env.NodeID, Expiry: now.Add(t.TTL).UnixNano(), Token: token}
			if err := r.write(ctx, rec); err != nil {
				return runtime.Term{}, fmt.Errorf("set leader record: %w", err)
			}
			r.mine = rec
			r.env.Step("lock-acquired")
			break
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(t.Retry):
		case <-r.releases.Channel():
		}
	}
	var mu sync.Mutex
	expiry := r.mine.Expiry
	lost, stop := runtime.Monitor(t.Renew, func(ctx context.Context) error {
		cur, err := r.read(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("renew: get: %w", err)
		}
		if cur == nil || cur.Holder != r.env.NodeID || cur.Token != r.mine.Token {
			return errors.New("leader record taken over by another candidate")
		}
		rec := r.mine
		rec.Expiry = r.env.Clock.Wall().Add(t.TTL).UnixNano()
		if err := r.write(ctx, rec); err != nil {
			return fmt.Errorf("renew: set: %w", err)
		}
		mu.Lock()
		expiry = rec.Expiry
		mu.Unlock()
		return nil
	})
	r.stopMon = stop
	valid := func() error {
		mu.Lock()
		defer mu.Unlock()
		if r.env.Clock.Wall().UnixNano() >= expiry {
			return errors.New("lease expired on the candidate clock")
		}
		return nil
	}
	return runtime.Term{Token: r.mine.Token, Lost: lost, Valid: valid, CallT: callT}, nil
}

func (r *naiveRecipe) Resign(ctx context.Context) error {
	if r.stopMon != nil {
		r.stopMon()
		r.stopMon = nil
	}
	if r.mine.Token == 0 {
		return nil
	}
	defer func() { r.mine = naiveRecord{} }()
	cur, err := r.read(ctx)
	if err != nil || cur == nil || cur.Holder != r.env.NodeID || cur.Token != r.mine.Token {
		return err
	}
	if err := r.rdb.Del(ctx, r.key).Err(); err != nil { // not atomic with the GET: naive on purpose
		return err
	}
	return r.rdb.Publish(ctx, r.releaseChannel(), r.env.NodeID).Err()
}

func (r *naiveRecipe) Close() error {
	r.releases.Close()
	return r.rdb.Close()
}
