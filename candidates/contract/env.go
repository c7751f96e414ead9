package contract

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a candidate's view of the environment the harness gave it.
type Config struct {
	NodeID        string
	Store         string
	Endpoints     []string // host:port
	Peers         []string // host:port of every candidate, this one included (EnvPeers)
	ListenPort    int      // peer port of this candidate (EnvListenPort); 0 = not given
	ResourceURL   string   // base URL, no trailing slash
	LeaseTTL      time.Duration
	WriteInterval time.Duration
	LeaderWork    time.Duration // between the lease check and the write; see EnvLeaderWork
	RenewInterval time.Duration // 0 = recipe default
	RetryInterval time.Duration // 0 = recipe default
	ClockFile     string
	ElectionName  string
	Recipe        string // may be empty for non-Go candidates
	Contract      int
	StoreUser     string // PostgreSQL; kubernetes: the certificate's user
	StorePassword string
	StoreDatabase string
	Kubeconfig    string // kubernetes: path of the kubeconfig file (EnvStoreKubeconfig)
	PodName       string // kubernetes: the candidate's own Pod (EnvPodName)
	FenceURL      string // the run's fence device, no trailing slash (EnvFenceURL); "" = none
}

// Environ renders c as KEY=value entries for a candidate process or container. A variable
// is either set with a value or not set at all: with store "none" there are no endpoints, so
// SPLITBRAIN_STORE_ENDPOINTS is left out rather than set empty (a candidate that insists on
// it would otherwise see a present but useless variable).
func (c Config) Environ() []string {
	env := []string{
		EnvNodeID + "=" + c.NodeID,
		EnvStore + "=" + c.Store,
	}
	if len(c.Endpoints) > 0 {
		env = append(env, EnvStoreEndpoints+"="+strings.Join(c.Endpoints, ","))
	}
	env = append(env,
		EnvResourceURL+"="+c.ResourceURL,
		EnvLeaseTTL+"="+c.LeaseTTL.String(),
		EnvWriteInterval+"="+c.WriteInterval.String(),
		EnvClockFile+"="+c.ClockFile,
		EnvElectionName+"="+c.ElectionName,
		EnvContract+"="+strconv.Itoa(Version),
	)
	if c.Recipe != "" {
		env = append(env, EnvRecipe+"="+c.Recipe)
	}
	if len(c.Peers) > 0 {
		env = append(env, EnvPeers+"="+strings.Join(c.Peers, ","))
	}
	if c.ListenPort > 0 {
		env = append(env, EnvListenPort+"="+strconv.Itoa(c.ListenPort))
	}
	for k, v := range map[string]string{EnvStoreUser: c.StoreUser, EnvStorePassword: c.StorePassword, EnvStoreDatabase: c.StoreDatabase,
		EnvStoreKubeconfig: c.Kubeconfig, EnvPodName: c.PodName, EnvFenceURL: c.FenceURL} {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	if c.RenewInterval > 0 {
		env = append(env, EnvRenewInterval+"="+c.RenewInterval.String())
	}
	if c.LeaderWork > 0 {
		env = append(env, EnvLeaderWork+"="+c.LeaderWork.String())
	}
	if c.RetryInterval > 0 {
		env = append(env, EnvRetryInterval+"="+c.RetryInterval.String())
	}
	return env
}

// ParseEnv reads the contract's variables through lookup (os.LookupEnv in a candidate). Every
// problem is reported at once, each naming the variable, what was wrong and the valid form.
func ParseEnv(lookup func(string) (string, bool)) (Config, error) {
	var errs []string
	bad := func(name, format string, args ...any) {
		errs = append(errs, name+": "+fmt.Sprintf(format, args...))
	}
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	required := func(name, example string) string {
		v := get(name)
		if v == "" {
			bad(name, "missing (required, e.g. %s=%s)", name, example)
		}
		return v
	}
	duration := func(name, def string, min time.Duration) time.Duration {
		v := get(name)
		if v == "" {
			if def == "" {
				return 0
			}
			v = def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			bad(name, "%q is not a Go duration (e.g. 2s, 500ms)", v)
			return 0
		}
		if d < min {
			bad(name, "%s is below the minimum %s", d, min)
		}
		return d
	}

	c := Config{Contract: Version}
	c.NodeID = required(EnvNodeID, "c1")
	if strings.ContainsAny(c.NodeID, " \t\n,/\"\\") {
		bad(EnvNodeID, "%q must not contain spaces, commas, slashes, quotes or backslashes", c.NodeID)
	}
	c.Store = required(EnvStore, StoreEtcd)
	if c.Store != "" && !isStore(c.Store) {
		bad(EnvStore, "unknown store %q (known: %s)", c.Store, strings.Join(Stores, ", "))
	}
	hostPorts := func(name, list string) []string {
		var out []string
		for _, ep := range strings.Split(list, ",") {
			ep = strings.TrimSpace(ep)
			host, port, ok := strings.Cut(ep, ":")
			if _, err := strconv.ParseUint(port, 10, 16); !ok || host == "" || err != nil {
				bad(name, "endpoint %q is not host:port", ep)
				continue
			}
			out = append(out, ep)
		}
		return out
	}
	// peers: host:port (the host is the node id) or id=host:port (tests on one machine).
	peers := func(list string) []string {
		var out []string
		for _, p := range strings.Split(list, ",") {
			p = strings.TrimSpace(p)
			id, addr, named := strings.Cut(p, "=")
			if !named {
				addr = p
			}
			if got := hostPorts(EnvPeers, addr); len(got) == 1 && (!named || id != "") {
				out = append(out, p)
			} else if named && id == "" {
				bad(EnvPeers, "peer %q has an empty id before '='", p)
			}
		}
		return out
	}
	if c.Store == StoreNone {
		// Peers instead of a store: endpoints are ignored, peers and the listen port required.
		if ps := required(EnvPeers, "c1:7000,c2:7000,c3:7000"); ps != "" {
			c.Peers = peers(ps)
		}
	} else if eps := required(EnvStoreEndpoints, "etcd1:2379,etcd2:2379"); eps != "" {
		c.Endpoints = hostPorts(EnvStoreEndpoints, eps)
	}
	if c.Store != StoreNone && get(EnvPeers) != "" {
		c.Peers = peers(get(EnvPeers))
	}
	if v := get(EnvListenPort); v != "" {
		p, err := strconv.ParseUint(v, 10, 16)
		if err != nil || p == 0 {
			bad(EnvListenPort, "%q is not a TCP port (1..65535)", v)
		}
		c.ListenPort = int(p)
	} else if c.Store == StoreNone {
		bad(EnvListenPort, "missing (required with %s=%s, e.g. %s=%d)", EnvStore, StoreNone, EnvListenPort, DefaultPeerPort)
	}
	if len(c.Peers) > 0 && c.NodeID != "" && !slices.Contains(c.PeerIDs(), c.NodeID) {
		bad(EnvPeers, "does not list this candidate (%s): every peer's host is its node id, this one included", c.NodeID)
	}
	if ru := required(EnvResourceURL, "http://resource:8080"); ru != "" {
		u, err := url.Parse(ru)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(EnvResourceURL, "%q is not an http(s) base URL like http://resource:8080", ru)
		}
		c.ResourceURL = strings.TrimRight(ru, "/")
	}
	c.LeaseTTL = duration(EnvLeaseTTL, DefaultLeaseTTL, 10*time.Millisecond)
	c.WriteInterval = duration(EnvWriteInterval, DefaultWriteInterval, time.Millisecond)
	c.LeaderWork = c.WriteInterval
	if get(EnvLeaderWork) != "" {
		c.LeaderWork = duration(EnvLeaderWork, "", 0)
	}
	c.RenewInterval = duration(EnvRenewInterval, "", time.Millisecond)
	c.RetryInterval = duration(EnvRetryInterval, "", time.Millisecond)
	if c.RenewInterval > 0 && c.LeaseTTL > 0 && c.RenewInterval >= c.LeaseTTL {
		bad(EnvRenewInterval, "%s must be shorter than the lease TTL %s", c.RenewInterval, c.LeaseTTL)
	}
	c.ClockFile = get(EnvClockFile)
	if c.ClockFile == "" {
		c.ClockFile = ClockFilePath
	}
	c.ElectionName = get(EnvElectionName)
	if c.ElectionName == "" {
		c.ElectionName = DefaultElectionName
	}
	for _, r := range c.ElectionName {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			bad(EnvElectionName, "%q may hold only letters, digits, '-', '_' and '.' (it becomes a key, znode and table value)", c.ElectionName)
			break
		}
	}
	c.Recipe = get(EnvRecipe)
	c.StoreUser, c.StorePassword, c.StoreDatabase = get(EnvStoreUser), get(EnvStorePassword), get(EnvStoreDatabase)
	c.Kubeconfig = get(EnvStoreKubeconfig)
	c.PodName = get(EnvPodName)
	if fu := get(EnvFenceURL); fu != "" {
		u, err := url.Parse(fu)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			bad(EnvFenceURL, "%q is not an http base URL like http://198.18.0.1:41234", fu)
		}
		c.FenceURL = strings.TrimRight(fu, "/")
	}
	if c.StoreUser == "" {
		c.StoreUser = DefaultStoreUser
	}
	if c.StoreDatabase == "" {
		c.StoreDatabase = DefaultStoreDatabase
	}
	if v := get(EnvContract); v != "" && v != strconv.Itoa(Version) {
		bad(EnvContract, "harness speaks contract version %q, this candidate implements version %d", v, Version)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("bad candidate environment (see docs/candidates.md):\n  %s", strings.Join(errs, "\n  "))
	}
	return c, nil
}

// PeerIDs are the node ids of Peers, in the same order.
func (c Config) PeerIDs() []string {
	out := make([]string, len(c.Peers))
	for i, p := range c.Peers {
		out[i], _ = splitPeer(p)
	}
	return out
}

// PeerAddrs maps each peer's node id to its host:port.
func (c Config) PeerAddrs() map[string]string {
	out := make(map[string]string, len(c.Peers))
	for _, p := range c.Peers {
		id, addr := splitPeer(p)
		out[id] = addr
	}
	return out
}

// splitPeer splits "id=host:port" or "host:port" (id = host) into id and address.
func splitPeer(p string) (id, addr string) {
	if id, addr, ok := strings.Cut(p, "="); ok {
		return id, addr
	}
	id, _, _ = strings.Cut(p, ":")
	return id, p
}

func isStore(s string) bool {
	for _, k := range Stores {
		if k == s {
			return true
		}
	}
	return false
}
