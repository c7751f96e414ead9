package stores

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

const (
	zkClientPort = "2181"
	// tickTime 500 ms: followers drop a silent leader after syncLimit ticks (2.5 s), and the
	// server accepts sessions from 2 ticks = 1 s, so recipes can use 2 s sessions.
	defaultZKTick = 500 * time.Millisecond
	zkConfPath    = "/conf/zoo.cfg"
	// JVM flags for a fast start on a small machine; the fastleader/cnxTimeout properties make
	// the first election retry quickly while peers are still starting (defaults back off to 60 s).
	zkJVMFlags = "-Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto " +
		"-Dzookeeper.cnxTimeout=1000 -Dzookeeper.fastleader.minNotificationInterval=100 " +
		"-Dzookeeper.fastleader.maxNotificationInterval=1000 " +
		"-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"
)

// ZooCfg renders zoo.cfg for an ensemble of names (server ids 1..n in order). Both the local
// image and the official one use it as-is when it exists at /conf/zoo.cfg.
func ZooCfg(names []string, tick time.Duration) string {
	tickMs := int(tick / time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tickMs)
	b.WriteString("initLimit=10\nsyncLimit=5\n")
	b.WriteString("dataDir=/data\ndataLogDir=/datalog\nclientPort=" + zkClientPort + "\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*tickMs, 60000)
	b.WriteString("4lw.commands.whitelist=*\nadmin.enableServer=false\nquorumListenOnAllIPs=true\nreconfigEnabled=false\n")
	b.WriteString("autopurge.purgeInterval=0\n")
	if len(names) == 1 {
		b.WriteString("standaloneEnabled=true\n")
		return b.String()
	}
	b.WriteString("standaloneEnabled=false\n")
	for i, n := range names {
		fmt.Fprintf(&b, "server.%d=%s:2888:3888;%s\n", i+1, n, zkClientPort)
	}
	return b.String()
}

type zkCluster struct{ base }

func launchZooKeeper(ctx context.Context, env *launchEnv) (Cluster, error) {
	names := nodeNames("zk", env.opts.Nodes)
	cfg := []byte(ZooCfg(names, env.opts.ZKTickTime))
	specs := make([]platform.NodeSpec, len(names))
	for i, n := range names {
		specs[i] = platform.NodeSpec{
			Name: n, Role: string(storekinds.ZooKeeper), Image: env.image,
			Env:          map[string]string{"ZOO_MY_ID": fmt.Sprint(i + 1), "JVMFLAGS": zkJVMFlags},
			Files:        []platform.File{{Path: zkConfPath, Content: cfg, Mode: 0o644}},
			ExposedPorts: []string{zkClientPort + "/tcp"},
			LogDir:       env.opts.LogDir,
		}
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, specs)
	if err != nil {
		return nil, err
	}
	c := &zkCluster{base{kind: storekinds.ZooKeeper, nodes: nodes, port: zkClientPort}}
	c.nodeRT = zkServerRoundTrip
	if err := finishLaunch(ctx, env, &c.base, start, c.serverVersion); err != nil {
		return nil, err
	}
	return c, nil
}

type zkNopLogger struct{}

func (zkNopLogger) Printf(string, ...any) {}

// zkServerRoundTrip creates and deletes an ephemeral znode through one server; writes need a quorum.
func zkServerRoundTrip(ctx context.Context, name, ep string) error {
	// A server outside a quorum answers srvr with "not currently serving requests" and drops
	// sessions; the client would then back off for up to a second. Ask first.
	out, err := zkSrvr(ctx, ep)
	if err != nil {
		return fmt.Errorf("zookeeper %s (%s): %w", name, ep, err)
	}
	if SrvrField(out, "Mode") == "" {
		return fmt.Errorf("zookeeper %s: not serving: %s", name, strings.TrimSpace(out))
	}
	conn, events, err := zk.Connect([]string{ep}, 4*time.Second, zk.WithLogger(zkNopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("zookeeper %s (%s): %w", name, ep, err)
	}
	defer conn.Close()
	for connected := false; !connected; {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				connected = true
			}
		case <-ctx.Done():
			return fmt.Errorf("zookeeper %s (%s): no session: %w", name, ep, ctx.Err())
		}
	}
	path := fmt.Sprintf("/splitbrain-ready-%s-%d", name, time.Now().UnixNano())
	done := make(chan error, 1)
	go func() {
		p, err := conn.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err == nil {
			err = conn.Delete(p, -1)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("zookeeper %s: create/delete: %w", name, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zookeeper %s: create/delete: %w", name, ctx.Err())
	}
}

// zkSrvr sends the "srvr" four-letter word and returns the server's answer.
func zkSrvr(ctx context.Context, ep string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", ep)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "srvr"); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	if err != nil && len(out) == 0 {
		return "", err
	}
	return string(out), nil
}

// SrvrField extracts "Key: value" from a srvr answer.
func SrvrField(srvr, key string) string {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (c *zkCluster) serverVersion(ctx context.Context) (string, error) {
	eps, err := c.HostEndpoints(ctx)
	if err != nil {
		return "", err
	}
	out, err := zkSrvr(ctx, eps[0])
	if err != nil {
		return "", err
	}
	v := SrvrField(out, "Zookeeper version")
	if v == "" {
		return "", fmt.Errorf("no version in srvr answer %q", out)
	}
	// "3.8.0-1, built on ..." -> "3.8.0-1"
	v, _, _ = strings.Cut(v, ",")
	return v, nil
}

// Leader asks every server for its mode; the one in mode "leader" (or the standalone one) leads.
// Servers that are down are skipped.
func (c *zkCluster) Leader(ctx context.Context) (*platform.Node, error) {
	var errs []string
	for i, n := range c.nodes {
		ep, err := n.Endpoint(ctx, zkClientPort)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name(), err))
			continue
		}
		out, err := zkSrvr(ctx, ep)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", c.nodes[i].Name(), err))
			continue
		}
		switch mode := SrvrField(out, "Mode"); mode {
		case "leader", "standalone":
			return c.nodes[i], nil
		case "":
			errs = append(errs, fmt.Sprintf("%s: %s", c.nodes[i].Name(), strings.TrimSpace(out)))
		}
	}
	return nil, fmt.Errorf("zookeeper leader: no server reports mode leader (%s)", strings.Join(errs, "; "))
}
