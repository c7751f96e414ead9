//go:build !core

package candidates

// dynamodb-lease: the conditional-write lease DynamoDB users build (and lock clients such as
// the DynamoDB Lock Client wrap), with the AWS SDK for Go v2. One item per election holds
// {holder, expiry, version}. Acquire is one UpdateItem with the condition "no holder, or the
// lease expired, or I am the holder" that sets holder and expiry and increments version; the
// expiry is judged on the candidate's clock (the writer's own time is stored and compared,
// as the pattern does), so a skewed candidate clock moves it. The version after that write
// is the fencing token. Renew = UpdateItem of expiry on condition holder and version are
// still ours; resign = REMOVE holder on the same condition. The leader steps down when a
// renew is refused or fails, or when its local deadline (from the send time of the last
// good acquire/renew, on the candidate clock) passes. Waiting candidates poll.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/runtime"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

var dynamoLease = runtime.Spec{
	Name: "dynamodb-lease", Store: storekinds.DynamoDB, ClockAware: true,
	Summary: "DynamoDB conditional UpdateItem lease (expiry on the candidate clock); token = version attribute",
	Timing:  dynamoTiming,
	New:     newDynamoLease,
}

// dynamoTiming: poll-based like redis-setnx, but expiry is judged by the waiter on its own
// clock: crash → the last renew's expiry + one poll.
func dynamoTiming(c contract.Config) runtime.Timing {
	retry := firstNonZero(c.RetryInterval, 50*time.Millisecond)
	return runtime.Timing{TTL: c.LeaseTTL, Renew: firstNonZero(c.RenewInterval, c.LeaseTTL/3), Retry: retry,
		HandoffBound: retry + 500*time.Millisecond, FailoverBound: c.LeaseTTL + retry + 500*time.Millisecond}
}

// dynamoTable holds one item per election name; every candidate creates it when missing
// (the store keeps tables in memory: after a server restart it is gone).
const dynamoTable = "splitbrain_leases"

const (
	dynamoAcquireCond = "attribute_not_exists(holder) OR expiry < :now OR holder = :me"
	dynamoAcquireSet  = "SET holder = :me, expiry = :exp, version = if_not_exists(version, :zero) + :one"
	dynamoOwnCond     = "holder = :me AND version = :v"
)

type dynamoRecipe struct {
	env  runtime.Env
	cli  *dynamodb.Client
	http *http.Client
	name string
	// callTimeout bounds each store call below the TTL (R16).
	callTimeout time.Duration

	version int64  // version of the current term, 0 when none
	stopMon func() // ends the term's renew monitor
}

func newDynamoLease(ctx context.Context, env runtime.Env) (runtime.Recipe, error) {
	if len(env.Endpoints) != 1 {
		return nil, fmt.Errorf("dynamodb-lease needs exactly one endpoint, got %v", env.Endpoints)
	}
	t := min(max(env.Timing.Renew, 100*time.Millisecond), env.Timing.TTL/2)
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: t}).DialContext, MaxIdleConnsPerHost: 4,
		ResponseHeaderTimeout: t}
	hc := &http.Client{Transport: tr, Timeout: t}
	cli := dynamodb.New(dynamodb.Options{
		// The SDK resolves the name on every new connection (R12); a dead one fails the call.
		BaseEndpoint: aws.String("http://" + env.Endpoints[0]),
		Region:       "us-east-1",
		// A static fake credential: the server checks the signature's form, not the key.
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "splitbrain", SecretAccessKey: "splitbrain", Source: "static"}, nil
		}),
		// No retries: a retried conditional write whose first reply was lost would count as
		// refused (the "I am the holder" clause recovers it on the next poll instead).
		Retryer:    aws.NopRetryer{},
		HTTPClient: hc,
	})
	return &dynamoRecipe{env: env, cli: cli, http: hc, name: env.ElectionName, callTimeout: t}, nil
}

func (r *dynamoRecipe) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: r.name}}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func (r *dynamoRecipe) me() types.AttributeValue {
	return &types.AttributeValueMemberS{Value: r.env.NodeID}
}

// ensureTable creates the lease table when missing; a concurrent create by another
// candidate is fine.
func (r *dynamoRecipe) ensureTable(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	_, err := r.cli.CreateTable(cctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(dynamoTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", dynamoTable, err)
	}
	return nil
}

// acquire tries the conditional write once: the new version, or 0 when another candidate
// holds an unexpired lease.
func (r *dynamoRecipe) acquire(ctx context.Context, now time.Time) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	out, err := r.cli.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(dynamoTable),
		Key:                 r.key(),
		ConditionExpression: aws.String(dynamoAcquireCond),
		UpdateExpression:    aws.String(dynamoAcquireSet),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": r.me(), ":now": num(now.UnixMilli()), ":exp": num(now.Add(r.env.Timing.TTL).UnixMilli()),
			":zero": num(0), ":one": num(1),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, ok := out.Attributes["version"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("acquire: UpdateItem returned no version (%v)", out.Attributes)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("acquire: version %q is not a positive integer", v.Value)
	}
	return n, nil
}

func (r *dynamoRecipe) Campaign(ctx context.Context) (runtime.Term, error) {
	t := r.env.Timing
	var sent runtime.Instant
	var callT, version int64
	for {
		// The expiry written to the item is on the wall line; the local deadline on the
		// monotonic line.
		sent, callT = r.env.Clock.Mono(), history.Now()
		var err error
		version, err = r.acquire(ctx, r.env.Clock.Wall())
		if version > 0 {
			// Remembered before anything else: if ctx ended meanwhile (SIGTERM), the
			// shutdown's Resign gives the lease back unannounced (R10).
			r.version = version
		}
		if ctx.Err() != nil {
			return runtime.Term{}, ctx.Err()
		}
		if version > 0 {
			break
		}
		var missing *types.ResourceNotFoundException
		if errors.As(err, &missing) {
			if err := r.ensureTable(ctx); err != nil && ctx.Err() == nil {
				r.env.Logf("dynamodb-lease: %v", err)
			}
			continue
		}
		if err != nil {
			// A store that is down, cut off or restarting: keep polling (R12).
			r.env.Logf("dynamodb-lease: acquire: %v", err)
		}
		select {
		case <-ctx.Done():
			return runtime.Term{}, ctx.Err()
		case <-time.After(t.Retry):
		}
	}
	dl := &deadline{}
	dl.set(sent.Add(r.leaseFor()))
	lost, stop := runtime.Monitor(t.Renew, func(ctx context.Context) error {
		sentAt := r.env.Clock.Mono()
		err := r.own(ctx, "SET expiry = :exp", map[string]types.AttributeValue{":exp": num(r.env.Clock.Wall().Add(t.TTL).UnixMilli())})
		var failed *types.ConditionalCheckFailedException
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &failed):
			return errors.New("renew refused: the lease is held by another or was taken again (holder/version changed)")
		case err != nil:
			return fmt.Errorf("renew failed: %w", err)
		}
		dl.set(sentAt.Add(r.leaseFor()))
		return nil
	})
	r.stopMon = stop
	valid := dl.valid(r.env.Clock.Mono, "local lease deadline")
	return runtime.Term{Token: version, Lost: lost, Valid: valid, CallT: callT}, nil
}

// leaseFor is the local deadline after a send, shortened for clock rate differences.
func (r *dynamoRecipe) leaseFor() time.Duration {
	return r.env.Timing.TTL - time.Duration(float64(r.env.Timing.TTL)*leaseDrift)
}

// own runs an UpdateItem on condition that holder and version are still this term's.
func (r *dynamoRecipe) own(ctx context.Context, update string, values map[string]types.AttributeValue) error {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	vals := map[string]types.AttributeValue{":me": r.me(), ":v": num(r.version)}
	for k, v := range values {
		vals[k] = v
	}
	_, err := r.cli.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(dynamoTable), Key: r.key(),
		ConditionExpression: aws.String(dynamoOwnCond), UpdateExpression: aws.String(update),
		ExpressionAttributeValues: vals,
	})
	return err
}

// Resign removes the holder (keeping version, so the next acquire counts on) if the lease
// is still this term's; someone else's lease is left alone.
func (r *dynamoRecipe) Resign(ctx context.Context) error {
	if r.stopMon != nil {
		r.stopMon()
		r.stopMon = nil
	}
	if r.version == 0 {
		return nil
	}
	err := r.own(ctx, "REMOVE holder, expiry", nil)
	r.version = 0
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil // already taken over: nothing of ours to give back
	}
	return errOrNil("release", err)
}

func (r *dynamoRecipe) Close() error {
	r.http.CloseIdleConnections()
	return nil
}
