// Command dynamodb is an example candidate for --store dynamodb, written from
// docs/candidates.md section 8 ("DynamoDB"): a lease item taken with a conditional
// UpdateItem, its version the fencing token. Build it static and run it:
//
//	CGO_ENABLED=0 go build -o /tmp/dynamodb-candidate ./examples/stores/dynamodb
//	splitbrain run --store dynamodb --candidate-cmd /tmp/dynamodb-candidate --nemesis pause-leader --time 30s
//
// Built with -tags broken it passes the endpoint without a scheme (endpoint_broken.go), the
// mistake `splitbrain candidate check` reports as endpoint-without-scheme.
package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

const table = "example_leases"

type lease struct {
	cli     *dynamodb.Client
	timeout time.Duration
	env     candidate.Env
	me      string // holder id: unique per process, so a restart never inherits a lease
}

func main() {
	env := candidate.Load("dynamodb")
	ctx, stop := candidate.Signals()
	defer stop()
	timeout := min(max(env.Renew, 100*time.Millisecond), env.TTL/2) // R16
	l := &lease{env: env, timeout: timeout, me: env.Node + "-" + candidate.Unique(),
		cli: dynamodb.New(dynamodb.Options{
			BaseEndpoint: aws.String(endpointURL(env.Endpoints[0])),
			Region:       "us-east-1", // any region: dynalite does not check it
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "example", SecretAccessKey: "example", Source: "static"}, nil
			}),
			// A retried conditional write whose answer was lost would read as refused.
			Retryer:    aws.NopRetryer{},
			HTTPClient: &http.Client{Timeout: timeout},
		})}
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		version, sent, callT := l.campaign(ctx)
		if version == 0 {
			break // SIGTERM while waiting
		}
		if ctx.Err() != nil { // won after SIGTERM: give it back unannounced (R10)
			l.release(version)
			break
		}
		dl := &candidate.Deadline{}
		dl.Extend(sent, env.TTL-env.TTL/100) // the lease runs from the send time, minus drift
		candidate.Elected(version, callT)
		stopRenew := candidate.Every(ctx, env.Renew, func(ctx context.Context) {
			sent := time.Now()
			err := l.own(ctx, version, "SET expiry = :exp", map[string]types.AttributeValue{":exp": num(sent.Add(env.TTL).UnixMilli())})
			var refused *types.ConditionalCheckFailedException
			switch {
			case err == nil:
				dl.Extend(sent, env.TTL-env.TTL/100)
			case errors.As(err, &refused):
				dl.Lose("renew refused: another candidate holds the lease")
			case ctx.Err() == nil:
				candidate.Error("renew: " + err.Error()) // the deadline decides
			}
		})
		reason := w.Lead(ctx, version, dl.Lost)
		stopRenew()
		candidate.SteppedDown(reason)
		l.release(version)
	}
	os.Exit(0)
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func (l *lease) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: l.env.Election}}
}

// campaign polls the acquire every retry interval until it wins (the new version, the send
// time and its CLOCK_MONOTONIC) or ctx ends (0).
func (l *lease) campaign(ctx context.Context) (version int64, sent time.Time, callT int64) {
	for {
		sent, callT = time.Now(), candidate.Monotonic()
		v, err := l.acquire(sent)
		if v > 0 {
			return v, sent, callT
		}
		var missing *types.ResourceNotFoundException
		if errors.As(err, &missing) {
			l.createTable()
			continue
		}
		if err != nil {
			candidate.Error("acquire: " + err.Error())
		}
		if !candidate.Sleep(ctx, l.env.Retry) {
			return 0, sent, callT
		}
	}
}

// acquire is one conditional UpdateItem: free, expired or already ours -> ours, version + 1.
// It is not bound to the campaign's context, so that an acquire that won is seen and given
// back after SIGTERM (R10).
func (l *lease) acquire(now time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	out, err := l.cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(table),
		Key:                 l.key(),
		ConditionExpression: aws.String("attribute_not_exists(holder) OR expiry < :now OR holder = :me"),
		UpdateExpression:    aws.String("SET holder = :me, expiry = :exp, version = if_not_exists(version, :zero) + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": &types.AttributeValueMemberS{Value: l.me}, ":now": num(now.UnixMilli()),
			":exp": num(now.Add(l.env.TTL).UnixMilli()), ":zero": num(0), ":one": num(1),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	var taken *types.ConditionalCheckFailedException
	if errors.As(err, &taken) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, _ := out.Attributes["version"].(*types.AttributeValueMemberN)
	if v == nil {
		return 0, errors.New("UpdateItem returned no version")
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

// createTable makes the lease table; another candidate may just have made it.
func (l *lease) createTable() {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	_, err := l.cli.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		candidate.Error("create table: " + err.Error())
	}
}

// own updates the lease on condition that this term still holds it.
func (l *lease) own(ctx context.Context, version int64, update string, values map[string]types.AttributeValue) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	values[":me"], values[":v"] = &types.AttributeValueMemberS{Value: l.me}, num(version)
	_, err := l.cli.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: l.key(),
		ConditionExpression: aws.String("holder = :me AND version = :v"),
		UpdateExpression:    aws.String(update), ExpressionAttributeValues: values,
	})
	return err
}

// release gives the lease back (the version stays: it is the token counter).
func (l *lease) release(version int64) {
	if err := l.own(context.Background(), version, "REMOVE holder, expiry", nil); err != nil {
		candidate.Error("release: " + err.Error())
	}
}
