package platform

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSubnetPool(t *testing.T) {
	good := map[string]string{
		"198.19.0.0/16":   "198.19.0.0/16",
		"198.18.0.0/15":   "198.18.0.0/15",
		"198.19.42.0/24":  "198.19.42.0/24",
		" 198.19.7.9/20 ": "198.19.0.0/20",
	}
	for in, want := range good {
		p, err := ParseSubnetPool(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseSubnetPool(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"10.0.0.0/16", "198.17.0.0/16", "198.18.0.0/14", "198.19.0.0/25", "fd00::/64", "nonsense", ""} {
		if _, err := ParseSubnetPool(in); err == nil {
			t.Errorf("ParseSubnetPool(%q) accepted an invalid pool", in)
		} else if !strings.Contains(err.Error(), DefaultSubnetPool) {
			t.Errorf("error for %q does not show a valid example: %v", in, err)
		}
	}
}

func TestSubnetPoolFromEnv(t *testing.T) {
	t.Setenv(EnvSubnetPool, "10.1.0.0/16")
	if _, err := subnetPool(); err == nil || !strings.Contains(err.Error(), EnvSubnetPool) {
		t.Fatalf("bad env pool: want an error naming %s, got %v", EnvSubnetPool, err)
	}
	t.Setenv(EnvSubnetPool, "198.18.128.0/17")
	p, err := subnetPool()
	if err != nil || p.String() != "198.18.128.0/17" {
		t.Fatalf("env pool: %v %v", p, err)
	}
}

func TestChooseSubnet(t *testing.T) {
	pool := netip.MustParsePrefix("198.19.0.0/22") // four /24s
	mp := netip.MustParsePrefix
	got, err := ChooseSubnet(pool, nil, 0)
	if err != nil || got != mp("198.19.0.0/24") {
		t.Fatalf("empty: %v %v", got, err)
	}
	// Offset wraps around the pool.
	if got, _ := ChooseSubnet(pool, nil, 6); got != mp("198.19.2.0/24") {
		t.Fatalf("offset 6: %v", got)
	}
	// Used /24s and a wider network that covers two of them are skipped.
	used := []netip.Prefix{mp("198.19.0.0/24"), mp("198.19.2.0/23"), mp("172.17.0.0/16")}
	if got, _ := ChooseSubnet(pool, used, 0); got != mp("198.19.1.0/24") {
		t.Fatalf("skip used: %v", got)
	}
	if got, _ := ChooseSubnet(pool, used, 2); got != mp("198.19.1.0/24") {
		t.Fatalf("skip used from offset 2: %v", got)
	}
	// A network covering the whole pool leaves nothing.
	if _, err := ChooseSubnet(pool, []netip.Prefix{mp("198.18.0.0/15")}, 0); err == nil || !strings.Contains(err.Error(), "splitbrain clean") {
		t.Fatalf("full pool: want an error pointing at splitbrain clean, got %v", err)
	}
	if n := len(subnets24(mp("198.19.0.0/16"))); n != 256 {
		t.Fatalf("a /16 has 256 /24s, got %d", n)
	}
}

func TestLabelsAndRunID(t *testing.T) {
	id := NewRunID()
	if err := ValidateRunID(id); err != nil {
		t.Fatalf("NewRunID gave an invalid id: %v", err)
	}
	if NewRunID() == id {
		t.Fatal("two run ids are equal")
	}
	l := Labels(id, "etcd", "etcd-1")
	want := map[string]string{LabelProject: "splitbrain", LabelRun: id, LabelRole: "etcd", LabelNode: "etcd-1"}
	if len(l) != len(want) {
		t.Fatalf("labels %v, want %v", l, want)
	}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	if _, ok := Labels(id, "network", "")[LabelNode]; ok {
		t.Error("node label set without a node")
	}
	for _, bad := range []string{"", "Upper", "has space", "a/b", strings.Repeat("x", 64)} {
		if ValidateRunID(bad) == nil {
			t.Errorf("run id %q accepted", bad)
		}
	}
}

func TestNodeSpecValidate(t *testing.T) {
	ok := NodeSpec{Name: "etcd-1", Role: "etcd", Image: "img"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*NodeSpec){
		"node name":      func(s *NodeSpec) { s.Name = "Etcd_1" },
		"role is empty":  func(s *NodeSpec) { s.Role = "" },
		"image is empty": func(s *NodeSpec) { s.Image = "" },
		"network mode":   func(s *NodeSpec) { s.NetworkMode = "host" },
		"cannot publish": func(s *NodeSpec) { s.NetworkMode = "container:abc"; s.ExposedPorts = []string{"80"} },
		"CapAdd ALL":     func(s *NodeSpec) { s.CapAdd = []string{"ALL"} },
		"absolute file":  func(s *NodeSpec) { s.Files = []File{{Path: "rel/x"}} },
		"absolute file ": func(s *NodeSpec) { s.Files = []File{{Path: "/dir/"}} },
	}
	for want, mutate := range cases {
		s := ok
		mutate(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(want)) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	side := NodeSpec{Name: "tools-c1", Role: "tools", Image: "img", NetworkMode: "container:abc", CapAdd: []string{"NET_ADMIN"}}
	if err := side.Validate(); err != nil {
		t.Errorf("sidecar spec refused: %v", err)
	}
}

// feed pushes docker-style timestamped frames through a follower generation.
func feed(ls *logStream, newGeneration bool, stream int, chunks ...string) {
	if newGeneration {
		ls.mu.Lock()
		ls.skipAtTS, ls.resumeTS = ls.atLastTS, ls.lastTS // what follow() does when a restarted container is followed
		ls.mu.Unlock()
	}
	for _, c := range chunks {
		lineWriter{ls, stream}.Write([]byte(c))
	}
	ls.flushPartial()
}

func TestLogStreamDedupAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	var got []string
	ls, err := newLogStream(nil, dir, "n1", func(b []byte) { got = append(got, string(b)) })
	if err != nil {
		t.Fatal(err)
	}
	defer ls.close()
	const t1, t2, t3 = "2026-01-01T00:00:01.000000001Z ", "2026-01-01T00:00:02.000000002Z ", "2026-01-01T00:00:03Z "
	// First run: a line split across writes, two lines with the same timestamp, a stderr line.
	feed(ls, true, 0, t1+"a\n"+t2+"b", "\n"+t2+"c\n")
	feed(ls, false, 1, t2+"err\n")
	// After a restart Docker replays everything from t2 (Since is inclusive) plus new output.
	feed(ls, true, 0, t2+"b\n"+t2+"c\n"+t2+"err\n"+t3+"d\n")
	want := []string{"a", "b", "c", "d"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("stdout lines %q, want %q", got, want)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "n1.log"))
	if string(b) != "a\nb\nc\nerr\nd\n" {
		t.Fatalf("log file %q", b)
	}
	// A line without a trailing newline is delivered when the stream ends.
	feed(ls, true, 0, "2026-01-01T00:00:04Z tail-no-newline")
	if got[len(got)-1] != "tail-no-newline" {
		t.Fatalf("partial line lost: %q", got)
	}
	// Within one follower a stdout line stamped just before an already delivered stderr
	// line is new output, not a replay (a raft candidate's elected event was lost so).
	const t4, t5 = "2026-01-01T00:00:09.000000004Z ", "2026-01-01T00:00:09.000000005Z "
	feed(ls, false, 1, t5+"raft: entering leader state\n")
	feed(ls, false, 0, t4+"elected\n")
	if got[len(got)-1] != "elected" {
		t.Fatalf("stdout line stamped before a stderr line was dropped: %q", got)
	}
}

func TestSplitTimestamp(t *testing.T) {
	ts, line := splitTimestamp([]byte("2026-11-22T10:00:00.123456789Z {\"k\":1}"))
	if ts.IsZero() || string(line) != `{"k":1}` || ts.Nanosecond() != 123456789 {
		t.Fatalf("%v %q", ts, line)
	}
	ts, line = splitTimestamp([]byte("no timestamp here"))
	if !ts.IsZero() || string(line) != "no timestamp here" {
		t.Fatalf("%v %q", ts, line)
	}
}
