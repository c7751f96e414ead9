// Command dynamodb-wallclock: a DynamoDB lease whose waiters decide that the holder's lease
// has expired by comparing an expiry timestamp in the item with their own wall clock.
//
// Reference: https://github.com/FoundationDB/fdb-kubernetes-operator/issues/241 ("Protecting
// against clock skew": lock expiry judged on clock time, so instances with skewed clocks
// disagree about who holds the lock); https://github.com/Azure/rtable/issues/16 (the same
// with DateTime.UtcNow). The fix is the design of AWS's own lock client,
// https://github.com/awslabs/amazon-dynamodb-lock-client#how-we-handle-clock-skew: the holder
// changes a record version number (RVN) at every heartbeat, and a waiter takes the lock only
// after it has seen the same RVN for a whole lease duration, measured on its own clock.
//
// Mechanism: a waiter's clock runs fast (clock:op=rate on a follower). Its wall clock passes
// the stored expiry while the holder still renews, so it takes the live lease; the holder
// learns it at its next renewal. With an unfenced resource the holder's writes land after its
// successor's. Neither referenced lock is a DynamoDB client (the operator's lives in
// FoundationDB, rtable's in Azure tables): this is their expiry rule on a DynamoDB item, with
// the AWS SDK for Go v2.
//
// Fix: the RVN wait. A waiter measures "unchanged for a lease duration" on its monotonic
// clock, so a clock that runs fast by less than the lease's margin (TTL / renew period = 3x
// here) takes nothing from a live holder. Built with -tags buggy waiters compare expiry
// timestamps. Both variants read the clock file (docs/candidates.md section 5).
//
//	CGO_ENABLED=0 go build -tags buggy -o /tmp/dynamodb-wallclock ./examples/bugs/dynamodb-wallclock
package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

const table = "corpus_leases"

type lease struct {
	cli     *dynamodb.Client
	timeout time.Duration
	env     candidate.Env
	clock   *candidate.Clock
	me      string
	// maxSeen is the highest version (token) this candidate has read or won. dynalite keeps
	// its tables in memory: a restarted server has forgotten the item, and the version
	// would start again at 1 (token-duplicate, docs/findings.md section 2). Real DynamoDB is
	// durable, so that is the emulator's loss, not this entry's bug, and both variants
	// guard against it: a forgotten item is recreated with a version above maxSeen, and
	// only after it stayed forgotten for a lease duration on the monotonic clock (a holder
	// that renewed just before the restart may trust its lease that long).
	maxSeen int64
}

func main() {
	env := candidate.Load("dynamodb")
	ctx, stop := candidate.Signals()
	defer stop()
	timeout := min(max(env.Renew, 100*time.Millisecond), env.TTL/2)
	l := &lease{env: env, timeout: timeout, clock: candidate.NewClock(), me: env.Node + "-" + candidate.Unique(),
		cli: dynamodb.New(dynamodb.Options{
			BaseEndpoint: aws.String("http://" + env.Endpoints[0]),
			Region:       "us-east-1",
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "corpus", SecretAccessKey: "corpus", Source: "static"}, nil
			}),
			Retryer:    aws.NopRetryer{},
			HTTPClient: &http.Client{Timeout: timeout},
		})}
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.CampaigningOnClock()
		version, sentMono, callT := l.campaign(ctx)
		if version == 0 {
			break // SIGTERM while waiting
		}
		if ctx.Err() != nil { // won after SIGTERM: give it back unannounced (R10)
			l.release(version)
			break
		}
		dl := &deadline{clock: l.clock}
		dl.extend(sentMono, env.TTL-env.TTL/100)
		candidate.Elected(version, callT)
		stopRenew := candidate.Every(ctx, env.Renew, func(ctx context.Context) {
			sent := l.clock.Mono()
			err := l.own(ctx, version, "SET expiry = :exp, rvn = :rvn", map[string]types.AttributeValue{
				":exp": num(l.clock.Wall().Add(env.TTL).UnixMilli()), ":rvn": str(candidate.Unique())})
			var refused *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				dl.extend(sent, env.TTL-env.TTL/100)
			case errors.As(err, &refused):
				dl.lose("renew refused: another candidate holds the lease")
			}
		})
		reason := w.Lead(ctx, version, dl.lost)
		stopRenew()
		candidate.SteppedDown(reason)
		l.release(version)
	}
	os.Exit(0)
}

// deadline is the holder's lease end on the clock's monotonic line, from the send time of
// the acquire or renewal that succeeded.
type deadline struct {
	mu    sync.Mutex
	clock *candidate.Clock
	end   time.Duration
	why   string
}

func (d *deadline) extend(sent, length time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.end = max(d.end, sent+length)
}

func (d *deadline) lose(why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.why == "" {
		d.why = why
	}
}

func (d *deadline) lost() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.why == "" && d.clock.Mono() >= d.end {
		return "lease deadline passed without a renewal"
	}
	return d.why
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func (l *lease) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"name": str(l.env.Election)}
}

// campaign polls until it wins: the new version (the token), the acquire's send time on the
// monotonic line, and its CLOCK_MONOTONIC; 0 when ctx ended.
func (l *lease) campaign(ctx context.Context) (version int64, sent time.Duration, callT int64) {
	var seenRVN string            // the holder's RVN as last read
	var seenAt time.Duration      // when it was first read unchanged, monotonic line
	forgotAt := time.Duration(-1) // when the store was first seen to have forgotten the item
	forgotten := func() bool {
		if l.maxSeen == 0 {
			return false // nothing to forget: a fresh store
		}
		if forgotAt < 0 {
			forgotAt = l.clock.Mono()
		}
		return l.clock.Mono()-forgotAt < l.env.TTL
	}
	for {
		cond := "attribute_not_exists(holder)"
		vals := map[string]types.AttributeValue{}
		item, err := l.read(ctx)
		if v, ok := item["version"].(*types.AttributeValueMemberN); ok {
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			l.maxSeen, forgotAt = max(l.maxSeen, n), -1
		}
		switch {
		case err != nil:
			var missing *types.ResourceNotFoundException
			if errors.As(err, &missing) {
				l.createTable()
				forgotten()
				continue
			}
			candidate.Error("read: " + err.Error())
		case item["version"] == nil && forgotten():
			if !candidate.Sleep(ctx, l.env.Retry) {
				return 0, l.clock.Mono(), candidate.Monotonic()
			}
			continue
		case item["holder"] == nil:
		case buggy:
			// BUG: the holder's expiry, written from its wall clock, against ours.
			cond = "attribute_not_exists(holder) OR expiry < :now"
			vals[":now"] = num(l.clock.Wall().UnixMilli())
		default:
			// The fix: the same RVN for a whole lease duration on our monotonic clock.
			var rvn string
			if v, ok := item["rvn"].(*types.AttributeValueMemberS); ok {
				rvn = v.Value
			}
			if rvn != seenRVN {
				seenRVN, seenAt = rvn, l.clock.Mono()
			} else if l.clock.Mono()-seenAt >= l.env.TTL {
				cond = "attribute_not_exists(holder) OR rvn = :seen"
				vals[":seen"] = str(seenRVN)
			}
		}
		sent, callT = l.clock.Mono(), candidate.Monotonic()
		if v, _ := l.acquire(cond, vals); v > 0 {
			l.maxSeen = max(l.maxSeen, v)
			return v, sent, callT
		}
		if !candidate.Sleep(ctx, l.env.Retry) {
			return 0, sent, callT
		}
	}
}

func (l *lease) read(ctx context.Context) (map[string]types.AttributeValue, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	out, err := l.cli.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: l.key(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if out.Item == nil {
		return map[string]types.AttributeValue{}, nil
	}
	return out.Item, nil
}

// acquire is one conditional UpdateItem: ours with a new RVN and version + 1 when cond holds
// (a forgotten item's version counts on from maxSeen).
// It is not bound to the campaign's context, so that an acquire that won is seen and given
// back after SIGTERM (R10).
func (l *lease) acquire(cond string, vals map[string]types.AttributeValue) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	vals[":me"], vals[":rvn"], vals[":zero"], vals[":one"] = str(l.me), str(candidate.Unique()), num(l.maxSeen), num(1)
	vals[":exp"] = num(l.clock.Wall().Add(l.env.TTL).UnixMilli())
	out, err := l.cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: l.key(),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET holder = :me, expiry = :exp, rvn = :rvn, version = if_not_exists(version, :zero) + :one"),
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	v, _ := out.Attributes["version"].(*types.AttributeValueMemberN)
	if v == nil {
		return 0, errors.New("UpdateItem returned no version")
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

func (l *lease) createTable() {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	l.cli.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
}

// own updates the item on condition that this term still holds it.
func (l *lease) own(ctx context.Context, version int64, update string, vals map[string]types.AttributeValue) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":me"], vals[":v"] = str(l.me), num(version)
	_, err := l.cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: l.key(),
		ConditionExpression: aws.String("holder = :me AND version = :v"),
		UpdateExpression:    aws.String(update), ExpressionAttributeValues: vals,
	})
	return err
}

// release gives the lease back (the version stays: it is the token counter).
func (l *lease) release(version int64) {
	l.own(context.Background(), version, "REMOVE holder, expiry, rvn", nil)
}
