//go:build !core

package stores

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const dynamoPort = "8000"

// dynamoReadyTable is the table the round trip writes to; Reset removes it with the rest.
const dynamoReadyTable = "splitbrain_ready"

// DynamoClient is a DynamoDB client for endpoint host:port with a static fake credential (the
// server accepts any), no retries and no keep-alive, so every call dials (and resolves) anew.
func DynamoClient(hostPort string) *dynamodb.Client {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, DisableKeepAlives: true}
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String("http://" + hostPort),
		Region:       "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "splitbrain", SecretAccessKey: "splitbrain", Source: "splitbrain"}, nil
		}),
		Retryer:    aws.NopRetryer{},
		HTTPClient: &http.Client{Transport: tr},
	})
}

type dynamoCluster struct{ base }

func launchDynamoDB(ctx context.Context, env *launchEnv) (Cluster, error) {
	// dynalite in the local profile, DynamoDB Local in the official one; both serve on 8000.
	spec := platform.NodeSpec{
		Name: "dynamodb", Role: string(storekinds.DynamoDB), Image: env.image,
		Cmd:          images.LaunchFor(env.opts.Profile, storekinds.DynamoDB).Cmd,
		ExposedPorts: []string{dynamoPort + "/tcp"},
		LogDir:       env.opts.LogDir,
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, []platform.NodeSpec{spec})
	if err != nil {
		return nil, err
	}
	c := &dynamoCluster{base{kind: storekinds.DynamoDB, nodes: nodes, port: dynamoPort}}
	c.nodeRT = dynamoRoundTrip
	if err := finishLaunch(ctx, env, &c.base, start, c.serverVersion); err != nil {
		return nil, err
	}
	return c, nil
}

// dynamoRoundTrip creates the ready table when missing (the server keeps everything in
// memory, so after a restart it is gone), writes an item and reads it back consistently.
func dynamoRoundTrip(ctx context.Context, name, ep string) error {
	cli := DynamoClient(ep)
	if err := ensureDynamoTable(ctx, cli, dynamoReadyTable); err != nil {
		return fmt.Errorf("dynamodb %s (%s): %w", name, ep, err)
	}
	want := strconv.FormatInt(time.Now().UnixNano(), 10)
	key := map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "ready"}}
	item := map[string]types.AttributeValue{"name": key["name"], "v": &types.AttributeValueMemberS{Value: want}}
	if _, err := cli.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(dynamoReadyTable), Item: item}); err != nil {
		return fmt.Errorf("dynamodb %s (%s): PutItem: %w", name, ep, err)
	}
	out, err := cli.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(dynamoReadyTable), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("dynamodb %s (%s): GetItem: %w", name, ep, err)
	}
	if v, ok := out.Item["v"].(*types.AttributeValueMemberS); !ok || v.Value != want {
		return fmt.Errorf("dynamodb %s: GetItem returned %v, want the value %s just put", name, out.Item, want)
	}
	return nil
}

// ensureDynamoTable creates a table with string hash key "name" unless it exists, and waits
// until it is ACTIVE (dynalite here makes it so at once; DynamoDB Local takes a moment).
func ensureDynamoTable(ctx context.Context, cli *dynamodb.Client, table string) error {
	_, err := cli.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("CreateTable %s: %w", table, err)
	}
	for {
		out, err := cli.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("DescribeTable %s: %w", table, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("table %s is %s: %w", table, out.Table.TableStatus, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serverVersion asks the image's node for dynalite's package version; an image without it
// (the official profile's DynamoDB Local) is named by what it is.
func (c *dynamoCluster) serverVersion(ctx context.Context) (string, error) {
	code, out, err := c.nodes[0].Exec(ctx, []string{"node", "-p",
		`"dynalite " + require("/opt/dynalite/node_modules/dynalite/package.json").version + " (node " + process.version + ")"`})
	if err != nil || code != 0 {
		return "DynamoDB Local (no dynalite in the image)", nil
	}
	return strings.TrimSpace(lastLineOf(out)), nil
}

func lastLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Reset deletes every table (the recipes' lease tables and the ready table), verified by an
// empty ListTables.
func (c *dynamoCluster) Reset(ctx context.Context) error {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return err
	}
	cli := DynamoClient(eps[0])
	list, err := cli.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		return fmt.Errorf("dynamodb: ListTables: %w", err)
	}
	var errs []error
	for _, t := range list.TableNames {
		if _, err := cli.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)}); err != nil {
			errs = append(errs, fmt.Errorf("dynamodb: DeleteTable %s: %w", t, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Deletion is asynchronous in the API; dynalite's is immediate (deleteTableMs 0).
	for {
		list, err := cli.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			return fmt.Errorf("dynamodb: ListTables after the wipe: %w", err)
		}
		if len(list.TableNames) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamodb: tables %v left after DeleteTable: %w", list.TableNames, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
