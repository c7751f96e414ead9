//go:build core

package stores

import "context"

// The core build (-tags core) links no client for these stores (client-go, the AWS SDK,
// Consul's API); Linked reports false for them and Launch refuses them by name.
var launchDynamoDB, launchConsul, launchKubernetes func(context.Context, *launchEnv) (Cluster, error)
