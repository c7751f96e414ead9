package contract

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func goodEnv() map[string]string {
	return map[string]string{
		EnvNodeID: "c1", EnvStore: "etcd", EnvStoreEndpoints: "e1:2379, e2:2379",
		EnvResourceURL: "http://resource:8080/",
	}
}

func TestParseEnvDefaults(t *testing.T) {
	c, err := ParseEnv(lookupFrom(goodEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseTTL != 2*time.Second || c.WriteInterval != 50*time.Millisecond || c.ClockFile != ClockFilePath ||
		c.ElectionName != DefaultElectionName || c.ResourceURL != "http://resource:8080" ||
		len(c.Endpoints) != 2 || c.Endpoints[1] != "e2:2379" || c.RenewInterval != 0 {
		t.Fatalf("unexpected config %+v", c)
	}
	// Environ round-trips.
	m := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	c2, err := ParseEnv(lookupFrom(m))
	if err != nil || c2.LeaseTTL != c.LeaseTTL || c2.ResourceURL != c.ResourceURL || len(c2.Endpoints) != 2 {
		t.Fatalf("round trip: %+v, %v", c2, err)
	}
}

// TestParseEnvPeers: a store-less candidate gets its peers and listen port instead of store
// endpoints; a store candidate may ignore them (a backwards-compatible addition).
func TestParseEnvPeers(t *testing.T) {
	env := map[string]string{EnvNodeID: "c2", EnvStore: StoreNone, EnvResourceURL: "http://resource:8080",
		EnvPeers: "c1:7000, c2:7000,c3:7000", EnvListenPort: "7000"}
	c, err := ParseEnv(lookupFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.PeerIDs(), []string{"c1", "c2", "c3"}) || c.ListenPort != 7000 || len(c.Endpoints) != 0 {
		t.Fatalf("config %+v", c)
	}
	m := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if c2, err := ParseEnv(lookupFrom(m)); err != nil || !reflect.DeepEqual(c2.Peers, c.Peers) || c2.ListenPort != 7000 {
		t.Fatalf("round trip: %+v, %v", c2, err)
	}
	// Store "none" has no endpoints: the variable is not set at all (docs/candidates.md
	// section 1), and nothing the harness sets is empty.
	if v, ok := m[EnvStoreEndpoints]; ok {
		t.Errorf("store none: %s is set (%q), want it left out", EnvStoreEndpoints, v)
	}
	for k, v := range m {
		if v == "" {
			t.Errorf("store none: %s is set but empty", k)
		}
	}
	// An endpoint list given anyway (an old harness set it empty) is ignored with store none.
	m[EnvStoreEndpoints] = ""
	if _, err := ParseEnv(lookupFrom(m)); err != nil {
		t.Errorf("store none with %s empty: %v", EnvStoreEndpoints, err)
	}
	for _, bad := range []struct{ key, val, want string }{
		{EnvPeers, "", EnvPeers + ": missing"},
		{EnvPeers, "c1:7000,c3:7000", "does not list this candidate (c2)"},
		{EnvPeers, "c1,c2:7000", `endpoint "c1" is not host:port`},
		{EnvPeers, "=127.0.0.1:1,c2:7000", "empty id"},
		{EnvListenPort, "", EnvListenPort + ": missing"},
		{EnvListenPort, "70000", "is not a TCP port"},
	} {
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		e[bad.key] = bad.val
		if _, err := ParseEnv(lookupFrom(e)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%q: error %v, want %q", bad.key, bad.val, err, bad.want)
		}
	}
	env[EnvPeers] = "c1=127.0.0.1:17001,c2=127.0.0.1:17002"
	if c, err := ParseEnv(lookupFrom(env)); err != nil || c.PeerAddrs()["c2"] != "127.0.0.1:17002" || c.PeerIDs()[0] != "c1" {
		t.Fatalf("id=host:port form: %+v %v", c, err)
	}
	// A store candidate needs no peers, and an old harness that sets none is still fine.
	if c, err := ParseEnv(lookupFrom(goodEnv())); err != nil || len(c.Peers) != 0 {
		t.Fatalf("store run without peers: %+v %v", c, err)
	}
}

func TestParseEnvErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		key, val, want string
	}{
		{EnvNodeID, "", EnvNodeID + ": missing"},
		{EnvNodeID, "a b", "must not contain spaces"},
		{EnvStore, "mysql", `unknown store "mysql"`},
		{EnvStoreEndpoints, "e1", `endpoint "e1" is not host:port`},
		{EnvStoreEndpoints, "e1:99999", `endpoint "e1:99999" is not host:port`},
		{EnvResourceURL, "resource:8080", "is not an http(s) base URL"},
		{EnvLeaseTTL, "2", `"2" is not a Go duration`},
		{EnvLeaseTTL, "1ms", "below the minimum"},
		{EnvWriteInterval, "-5ms", "below the minimum"},
		{EnvRenewInterval, "3s", "must be shorter than the lease TTL"},
		{EnvElectionName, "a/b", "may hold only letters"},
		{EnvContract, "2", "contract version"},
	}
	for _, c := range cases {
		env := goodEnv()
		env[c.key] = c.val
		_, err := ParseEnv(lookupFrom(env))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: error %v, want it to name %s and say %q", c.key, c.val, err, c.key, c.want)
		}
	}
	// All problems at once.
	_, err := ParseEnv(lookupFrom(map[string]string{}))
	for _, k := range []string{EnvNodeID, EnvStore, EnvStoreEndpoints, EnvResourceURL} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("empty env: error %v does not name %s", err, k)
		}
	}
}

func TestParseLineValid(t *testing.T) {
	cases := []struct {
		line string
		want history.Event
		aw   bool
	}{
		{`{"t":5,"kind":"campaigning","clock":"offset-file"}`, history.Event{T: 5, Kind: history.KindCampaigning}, true},
		{`{"kind":"campaigning"}`, history.Event{T: 100, Kind: history.KindCampaigning, Stamped: true}, false},
		{` {"t":6,"kind":"elected","token":3,"node":"c1"} `, history.Event{T: 6, Kind: history.KindElected, Token: 3}, false},
		{`{"t":6,"kind":"elected","token":3,"call_t":4}`, history.Event{T: 6, Kind: history.KindElected, Token: 3, CallT: 4}, false},
		{`{"t":9,"kind":"write","token":3,"write_id":"c1-1","call_t":7,"result":"unknown"}`,
			history.Event{T: 9, Kind: history.KindWrite, Token: 3, WriteID: "c1-1", CallT: 7, Result: "unknown"}, false},
		{`{"t":10,"kind":"stepped-down","reason":"lease expired"}`, history.Event{T: 10, Kind: history.KindSteppedDown, Reason: "lease expired"}, false},
		{`{"t":10,"kind":"error","reason":"dial: refused"}`, history.Event{T: 10, Kind: history.KindError, Reason: "dial: refused"}, false},
		{`{"t":11,"kind":"step","name":"lock-acquired"}`, history.Event{T: 11, Kind: history.KindStep, Name: "lock-acquired"}, false},
	}
	for _, c := range cases {
		p, err := ParseLine("c1", []byte(c.line), 100)
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		c.want.V, c.want.Source, c.want.Node = history.Version, history.SourceCandidate, "c1"
		if !reflect.DeepEqual(p.Event, c.want) || p.ClockAware != c.aw {
			t.Errorf("%s:\n got %+v aware=%v\nwant %+v aware=%v", c.line, p.Event, p.ClockAware, c.want, c.aw)
		}
	}
}

func TestParseLineLogLines(t *testing.T) {
	for _, l := range []string{"", "   ", "hello", "[1,2]", "2024/01/01 starting", "\"quoted\""} {
		if _, err := ParseLine("c1", []byte(l), 100); !errors.Is(err, ErrNotEvent) {
			t.Errorf("%q: got %v, want ErrNotEvent", l, err)
		}
	}
}

func TestParseLineViolations(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"t":5}`, `missing "kind"`},
		{`{"t":5,"kind":"leader"}`, `unknown kind "leader"`},
		{`{"t":5,"kind":7}`, `"kind" must be a string`},
		{`{"t":5,"kind":"elected"}`, `needs "token"`},
		{`{"t":5,"kind":"elected","token":1,"call_t":6}`, `"call_t" 6 is after "t" 5`},
		{`{"t":5,"kind":"elected","token":0}`, `must be >= 1`},
		{`{"t":5,"kind":"elected","token":-3}`, `must be >= 1`},
		{`{"t":5,"kind":"elected","token":1.5}`, `not an integer`},
		{`{"t":5,"kind":"elected","token":1e3}`, `not an integer`},
		{`{"t":5,"kind":"elected","token":"4"}`, `must be an integer`},
		{`{"t":5,"kind":"elected","token":99999999999999999999}`, `fits in 64 bits`},
		{`{"t":5,"kind":"elected","token":1,"token":2}`, `appears twice`},
		{`{"t":5,"kind":"elected","token":1,"reason":"x"}`, `does not belong to a elected`},
		{`{"t":5,"kind":"elected","token":1,"extra":1}`, `unknown field "extra"`},
		{`{"t":5,"kind":"elected","token":{"a":1}}`, `not an object or array`},
		{`{"t":5,"kind":"elected","token":true}`, `must be a string or an integer`},
		{`{"t":5,"kind":"elected","token":null}`, `must be a string or an integer`},
		{`{"t":5,"kind":"elected","token":1} {"t":6}`, `trailing data`},
		{`{"t":5,"kind":"elected","token":1`, `invalid JSON`},
		{`{"t":5,,"kind":"elected"}`, `invalid JSON`},
		{`{"t":500,"kind":"campaigning"}`, `after the harness received`},
		{`{"t":0,"kind":"campaigning"}`, `must be >= 1`},
		{`{"t":5,"kind":"campaigning","clock":"wall"}`, `"clock" must be`},
		{`{"t":5,"kind":"campaigning","node":"c2"}`, `not this candidate's id`},
		{`{"t":5,"kind":"stepped-down"}`, `needs "reason"`},
		{`{"t":5,"kind":"stepped-down","reason":""}`, `must not be empty`},
		{`{"t":9,"kind":"write","token":3,"write_id":"w","call_t":10,"result":"accepted"}`, `is after "t"`},
		{`{"t":9,"kind":"write","token":3,"write_id":"w","call_t":8,"result":"ok"}`, `want accepted, rejected or unknown`},
		{`{"t":9,"kind":"write","token":3,"call_t":8,"result":"accepted"}`, `needs "write_id"`},
		{`{"t":5,"kind":"error","reason":"` + strings.Repeat("x", 3000) + `"}`, `the limit is`},
		{`{` + strings.Repeat(" ", MaxLineBytes) + `}`, `exceeds`},
		{`{"t":5,"kind":"step"}`, `step event needs "name"`},
		{`{"t":5,"kind":"step","name":""}`, `must not be empty`},
		{`{"t":5,"kind":"step","name":"lock acquired"}`, `use letters, digits`},
		{`{"t":5,"kind":"step","name":"` + strings.Repeat("x", 65) + `"}`, `the limit is 64`},
		{`{"t":5,"kind":"step","name":"x","reason":"y"}`, `does not belong to a step`},
		{`{"t":5,"kind":"error","reason":"x","name":"y"}`, `does not belong to a error`},
	}
	for _, c := range cases {
		_, err := ParseLine("c1", []byte(c.line), 100)
		var v *Violation
		if !errors.As(err, &v) || !strings.Contains(v.Reason, c.want) {
			t.Errorf("%.80s: got %v, want violation saying %q", c.line, err, c.want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"t":5,"kind":"campaigning","clock":"offset-file"}`,
		`{"t":6,"kind":"elected","token":3}`,
		`{"t":9,"kind":"write","token":3,"write_id":"c1-1","call_t":7,"result":"accepted"}`,
		`{"kind":"stepped-down","reason":"sigterm"}`,
		`{"t":5,"kind":"elected","token":1,"token":2}`,
		`not json`, `{"t":1e400}`, `{"kind":"error","reason":"\ud800"}`,
	} {
		f.Add([]byte(s), int64(100))
	}
	f.Fuzz(func(t *testing.T, line []byte, received int64) {
		p, err := ParseLine("c1", line, received)
		if err != nil {
			var v *Violation
			if !errors.Is(err, ErrNotEvent) && !errors.As(err, &v) {
				t.Fatalf("error of unexpected type %T: %v", err, err)
			}
			return
		}
		// Whatever is accepted must be a valid history event from this node.
		if verr := p.Event.Validate(); verr != nil {
			t.Fatalf("accepted %q but the event is invalid: %v", line, verr)
		}
		if p.Event.Node != "c1" || p.Event.Source != history.SourceCandidate {
			t.Fatalf("accepted %q with node/source %q/%q", line, p.Event.Node, p.Event.Source)
		}
		if received > 0 && p.Event.T > received {
			t.Fatalf("accepted t %d after receipt %d", p.Event.T, received)
		}
	})
}

func BenchmarkParseLine(b *testing.B) {
	line := []byte(`{"t":9,"kind":"write","token":3,"write_id":"c1-k3x9-17","call_t":7,"result":"accepted"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseLine("c1", line, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLeaderWorkDefaultsToTheInterval(t *testing.T) {
	base := map[string]string{
		EnvNodeID: "c1", EnvStore: "etcd", EnvStoreEndpoints: "etcd-1:2379",
		EnvResourceURL: "http://resource:8080", EnvWriteInterval: "40ms",
	}
	lookup := func(extra map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if v, ok := extra[k]; ok {
				return v, true
			}
			v, ok := base[k]
			return v, ok
		}
	}
	c, err := ParseEnv(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaderWork != 40*time.Millisecond {
		t.Fatalf("default leader work %v, want the 40ms write interval", c.LeaderWork)
	}
	if c, err = ParseEnv(lookup(map[string]string{EnvLeaderWork: "0s"})); err != nil || c.LeaderWork != 0 {
		t.Fatalf("explicit 0s: %v, %v", c.LeaderWork, err)
	}
	if _, err = ParseEnv(lookup(map[string]string{EnvLeaderWork: "-5ms"})); err == nil || !strings.Contains(err.Error(), EnvLeaderWork) {
		t.Fatalf("negative work accepted or error unnamed: %v", err)
	}
}

// The kubernetes variables (kubeconfig, own Pod) round-trip through Environ and ParseEnv.
func TestParseEnvKubernetes(t *testing.T) {
	env := map[string]string{EnvNodeID: "c1", EnvStore: StoreKubernetes, EnvStoreEndpoints: "kube-apiserver:6443",
		EnvResourceURL: "http://resource:8080", EnvStoreKubeconfig: KubeconfigPath, EnvPodName: "candidate-c1", EnvStoreUser: "c1"}
	c, err := ParseEnv(lookupFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kubeconfig != KubeconfigPath || c.PodName != "candidate-c1" || c.StoreUser != "c1" {
		t.Fatalf("config %+v", c)
	}
	m := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if m[EnvPodName] != "candidate-c1" || m[EnvStoreKubeconfig] != KubeconfigPath {
		t.Fatalf("Environ lost the kubernetes variables: %v", m)
	}
	if c, _ := ParseEnv(lookupFrom(goodEnv())); c.PodName != "" {
		t.Errorf("pod name %q without %s", c.PodName, EnvPodName)
	}
}
