// Package platform is the only code in splitbrain that talks to Docker. It starts labelled
// containers on a per-run bridge network (testcontainers-go for create/start/wait/exec, the
// moby client that testcontainers-go itself uses for pause, kill with a signal and inspect),
// streams every node's logs to a file, and sweeps whatever a run leaves behind.
package platform

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/moby/moby/client"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels put on every container and network the project creates. Sweeps select on them.
const (
	LabelProject = "io.splitbrain.project" // always ProjectName
	LabelRun     = "io.splitbrain.run"     // the run id (NewRunID)
	LabelRole    = "io.splitbrain.role"    // etcd, zookeeper, candidate, resource, tools, network, ...
	LabelNode    = "io.splitbrain.node"    // node name = network alias, e.g. etcd-1, c1

	ProjectName = "splitbrain"
)

// Environment variables testcontainers-go reads once, at its first call.
const (
	envRyukDisabled = "TESTCONTAINERS_RYUK_DISABLED"
	envHostOverride = "TESTCONTAINERS_HOST_OVERRIDE"
)

// EnvDockerDebug, when set, keeps testcontainers-go's own log output.
const EnvDockerDebug = "SPLITBRAIN_DOCKER_DEBUG"

// teardownTimeout bounds cleanup work that runs on an already cancelled context.
const teardownTimeout = 60 * time.Second

// engineAnswerTimeout bounds how long a call waits for the engine's first answer (response
// headers): a deadlocked dockerd once held a run inside NetworkList until go test's 60-minute
// deadline. Streams (logs, events, waits, exec) answer their headers at once and then carry on,
// so only a silent engine hits it; the slowest legitimate answers (a stop's grace period, a
// create on a loaded engine) take seconds.
var engineAnswerTimeout = 2 * time.Minute

// defaultEngineHost is where the engine listens when DOCKER_HOST is not set.
var defaultEngineHost = client.DefaultDockerHost

// Engine is a connection to the Docker engine.
type Engine struct {
	cli        *client.Client
	apiVersion string
	version    string
}

// Connect prepares testcontainers-go for offline use (Ryuk off; host ports on localhost,
// because this machine looks like a container to testcontainers' host detection) and pings
// the engine.
func Connect(ctx context.Context) (*Engine, error) {
	if _, ok := os.LookupEnv(envRyukDisabled); !ok {
		os.Setenv(envRyukDisabled, "true") // exactly "true": "1" parses but leaves Ryuk on
	}
	if _, ok := os.LookupEnv(envHostOverride); !ok {
		os.Setenv(envHostOverride, "localhost")
	}
	if os.Getenv(EnvDockerDebug) == "" {
		// testcontainers-go prints a banner and per-container chatter to stderr by default.
		tclog.SetDefault(tclog.NewNoopLogger())
	}
	// The transport mirrors the client's default one; FromEnv then points it at DOCKER_HOST.
	// A non-nil TLSNextProto keeps it HTTP/1.1 (the engine's API); without it the client's
	// clone of the transport sets up HTTP/2 and with it a TLS config, and the client then
	// talks https to a plain socket.
	hc := &http.Client{
		Transport: &http.Transport{
			MaxIdleConns:          6,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: engineAnswerTimeout,
			TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		},
		CheckRedirect: client.CheckRedirect,
	}
	// WithHost dials the default socket, as the default client does; FromEnv may override it.
	cli, err := client.New(client.WithHTTPClient(hc), client.WithHost(defaultEngineHost), client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	// No deadline of its own: an absent engine fails at once (no socket, connection refused),
	// and a busy one gets the same answer timeout as every call. A fixed 10 s here once failed
	// three tests of a loaded make test whose engine answered 15 s late.
	ver, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		cli.Close()
		return nil, EngineUnanswered(err)
	}
	return &Engine{cli: cli, apiVersion: ver.APIVersion, version: ver.Version}, nil
}

// EngineUnanswered says why the first call to the engine failed: nobody listens (start one),
// or the engine took the request and did not answer within the answer timeout (overloaded
// or hung: a restart helps, starting another does not).
func EngineUnanswered(err error) error {
	if strings.Contains(err.Error(), "timeout awaiting response headers") {
		return fmt.Errorf("the Docker engine took the request but did not answer within %v (%v): it is overloaded or hung; wait for the load to drop, or restart dockerd", engineAnswerTimeout, err)
	}
	return fmt.Errorf("no Docker engine answers (%v): run `make deps` (or scripts/ensure-docker.sh) to install and start one, or set DOCKER_HOST", err)
}

// Client exposes the moby client for the few calls the platform does not wrap.
func (e *Engine) Client() *client.Client { return e.cli }

// ServerVersion is the engine's version, e.g. "20.10.24+dfsg1".
func (e *Engine) ServerVersion() string { return e.version }

// Close releases the client connection.
func (e *Engine) Close() error { return e.cli.Close() }

// NewRunID returns a sortable, unique run id usable in labels and container names.
func NewRunID() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

var (
	runIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
	namePattern  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// ValidateRunID checks a run id can go into labels and container names.
func ValidateRunID(runID string) error {
	if !runIDPattern.MatchString(runID) {
		return fmt.Errorf("run id %q is invalid: use 1-63 chars of lowercase letters, digits, '.', '_' or '-' (platform.NewRunID makes one)", runID)
	}
	return nil
}

// Labels builds the label set of one object of a run.
func Labels(runID, role, node string) map[string]string {
	l := map[string]string{LabelProject: ProjectName, LabelRun: runID, LabelRole: role}
	if node != "" {
		l[LabelNode] = node
	}
	return l
}

// ErrNotRunning is returned by calls that need a running container (host PID, exec).
var ErrNotRunning = errors.New("container is not running")

// cleanupContext gives teardown its own bounded context that survives cancellation of ctx.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
}

// Start creates and starts a node on net (nil only with NetworkMode "container:..."), waits
// for spec.Wait, and streams its logs. On failure nothing of it is left behind and the error
// carries the tail of its log.
func (e *Engine) Start(ctx context.Context, runID string, net *Network, spec NodeSpec) (*Node, error) {
	return startNode(ctx, e, runID, net, spec)
}

// NewNetwork creates the run's bridge network on a free /24 of the pool. Several runs may
// start at once: when the engine reports an overlap we lost a race and try another subnet.
func (e *Engine) NewNetwork(ctx context.Context, runID string) (*Network, error) {
	return newNetwork(ctx, e, runID)
}

// Watch subscribes to start/die/oom/destroy events of every project container and calls fn
// for each, in the engine's order, from one goroutine. The subscription is live when Watch
// returns. fn filters by RunID (a pooled store cluster carries its pool's id).
func (e *Engine) Watch(ctx context.Context, fn func(ContainerEvent)) (*Watcher, error) {
	return watch(ctx, e, fn)
}
