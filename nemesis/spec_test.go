package nemesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseGood(t *testing.T) {
	cases := []struct {
		spec string
		want string // canonical
	}{
		{"pause:target=leader,every=10s,for=6s", "pause:target=leader,for=6s,every=10s"},
		{"  pause : target = leader , for=3xTTL ", "pause:target=leader,for=3xTTL"},
		{"kill", "kill"},
		{"clock:delta=+5s,op=bump", "clock:delta=+5s,op=bump"},
		{"clock:delta=+5s;loss:p=0.5", "clock:delta=+5s; loss:p=0.5"},
		{"clock:delta=+5s+loss:p=0.5", "clock:delta=+5s; loss:p=0.5"},
		{"pause-leader + kill:target=node:c2", profiles["pause-leader"].Spec + "; kill:target=node:c2"},
		{"none", "none"},
		{"", "none"},
		{"partition:shape=majorities-ring,among=all,mode=reject", "partition:among=all,mode=reject,shape=majorities-ring"},
		{"freeze:target=store-leader,for=2s,at=1s,count=2,every=5s,jitter=0s", "freeze:target=store-leader,for=2s,every=5s,at=1s,jitter=0s,count=2"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("Parse(%q) = %q, want %q", c.spec, got, c.want)
		}
		// The canonical form parses back to itself.
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("round trip of %q: %q, %v", s.String(), again.String(), err)
		}
	}
}

func TestParseBad(t *testing.T) {
	cases := []struct{ spec, wantInErr string }{
		{"paus:for=1s", `unknown fault kind or profile "paus"`},
		{"paus:for=1s", "valid form: KIND:key=value"},
		{"pause:forr=1s", `unknown key "forr" for pause: valid keys are target, for, every`},
		{"pause:for=-1s", "negative"},
		{"pause:every=-5s", "negative"},
		{"pause:for=0s", "longer than 0"},
		{"pause:for=abc", "bad duration"},
		{"pause:for=0xTTL", "bad TTL multiple"},
		{"pause:target=leaderr", `target "leaderr" is not valid for pause: use one of leader, stale-leader, follower`},
		{"pause:target=node:", "names no node"},
		{"pause:for=6s,every=5s", "must be longer than for"},
		{"pause:for=6s,for=7s", "given twice"},
		{"pause:for", "is not key=value"},
		{"loss:p=1.5", "0 < p <= 1"},
		{"loss:p=0", "0 < p <= 1"},
		{"partition:shape=ring", "want one of isolate, leader-from-store"},
		{"partition:mode=silent", "want one of drop, reject"},
		{"partition:shape=halves,target=leader", "takes no target"},
		{"partition:shape=leader-from-store,target=follower", "always targets the leader"},
		{"partition:shape=store-majority,target=leader", "store-minority"},
		{"partition:shape=isolate,among=store", "among= does not apply"},
		{"clock:delta=0s", "zero delta"},
		{"clock:op=warp", "bump, strobe, rate"},
		{"clock:op=rate", "op=rate needs rate="},
		{"clock:op=rate,rate=1", "other than 1"},
		{"clock:op=rate,rate=-2", "other than 1"},
		{"clock:op=rate,rate=1e308", "between 0.01 and 100"},
		{"clock:op=rate,rate=5e-324", "between 0.01 and 100"},
		{"clock:op=rate,rate=100.5", "between 0.01 and 100"},
		{"clock:op=rate,rate=0.009", "between 0.01 and 100"},
		{"clock:op=rate,rate=0x1p-2", "decimal"},
		{"clock:op=rate,rate=NaN", "other than 1"},
		{"clock:op=rate,rate=2,delta=5s", "delta= does not apply to op=rate"},
		{"clock:rate=2", "rate= applies only to op=rate"},
		{"latency:for=1s", "write delay:latency=200ms"},
		{"delay:latency=0s", "latency=0s: must be > 0"},
		{"delay:latency=-5ms", "must be > 0"},
		{"delay:dir=up", "want one of in, out, both"},
		{"delay:target=store-node", `target "store-node" is not valid for delay: use one of leader, stale-leader, follower, random-candidate, all-candidates`},
		{"delay:latency-jitter=-1s", "must be >= 0"},
		{"delay:latency=100ms + partition-leader-from-store", "routes the candidates' store connections through the fault proxy"},
		{"delay + loss", "run them in separate runs"},
		{"bandwidth:rate=0", "want a whole number of KB/s >= 1"},
		{"bandwidth:rate=1.5", "want a whole number of KB/s >= 1"},
		{"bandwidth:dir=up", "want one of in, out, both"},
		{"half-open:close-after=-1s", "must be >= 0"},
		{"half-open:timeout=1s", `unknown key "timeout" for half-open: valid keys are`},
		{"half-open + partition-leader-refused", "run them in separate runs"},
		{"slow-close:close-delay=0s", "must be > 0"},
		{"slow-close:target=all-store", `target "all-store" is not valid for slow-close`},
		{"reset:dir=sideways", "want one of in, out, both"},
		{"reset:target=store-leader", `target "store-leader" is not valid for reset`},
		{"reset + loss", "routes the candidates' store connections through the fault proxy"},
		{"timeout:for=1s", "write half-open:close-after=0s"},
		{"slow_close", "write slow-close:close-delay=2xTTL"},
		{"reset_peer", "write reset"},
		{"count=2", "unknown fault kind"},
		{"pause:count=0", "whole number >= 1"},
		{"@/nonexistent/file", "read nemesis schedule file"},
	}
	for _, c := range cases {
		_, err := Parse(c.spec)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error containing %q", c.spec, c.wantInErr)
			continue
		}
		if !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("Parse(%q) error %q does not contain %q", c.spec, err, c.wantInErr)
		}
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sched.txt")
	content := "# a schedule\npause:target=leader,for=2xTTL   # the classic\n\nloss:p=0.2,peer=store\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse("@" + path + "+kill-leader")
	if err != nil {
		t.Fatal(err)
	}
	want := "pause:target=leader,for=2xTTL; loss:p=0.2,peer=store; " + profiles["kill-leader"].Spec
	if s.String() != want {
		t.Fatalf("got %q\nwant %q", s, want)
	}
	nested := filepath.Join(dir, "nested.txt")
	os.WriteFile(nested, []byte("@"+path+"\n"), 0o644)
	if _, err := Parse("@" + nested); err == nil || !strings.Contains(err.Error(), "cannot include another file") {
		t.Fatalf("nested file: %v", err)
	}
}

func TestProfilesParseAndPlan(t *testing.T) {
	topo := Topology{Candidates: []string{"c1", "c2", "c3"}, StoreNodes: []string{"etcd-1", "etcd-2", "etcd-3"}, StoreKind: "etcd", TTL: 2 * time.Second}
	for _, p := range Profiles() {
		s, err := Parse(p.Name)
		if err != nil {
			t.Errorf("profile %s: %v", p.Name, err)
			continue
		}
		if p.Name == "none" {
			if !s.Empty() {
				t.Errorf("none is not empty: %s", s)
			}
			continue
		}
		if s.Empty() {
			t.Errorf("profile %s expands to nothing", p.Name)
		}
		if p.Name == "clock-bump-leader" || p.Name == "mixed" {
			continue // etcd servers cannot be skewed but candidates can: planned below too
		}
		plan, err := s.Plan(1, 60*time.Second, topo)
		if err != nil {
			t.Errorf("profile %s on etcd: %v", p.Name, err)
			continue
		}
		if len(plan.Faults) == 0 {
			t.Errorf("profile %s planned no fault in 60 s", p.Name)
		}
	}
	// pause-leader must outlive the lease: for > TTL.
	s, _ := Parse("pause-leader")
	plan, err := s.Plan(7, time.Minute, topo)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range plan.Faults {
		if time.Duration(f.For) <= topo.TTL {
			t.Fatalf("pause-leader pause %s is not longer than the TTL %s", f.For, topo.TTL)
		}
	}
	// Store-majority is impossible with one PostgreSQL node.
	pg := Topology{Candidates: []string{"c1", "c2"}, StoreNodes: []string{"postgres-1"}, StoreKind: "postgres", TTL: time.Second}
	s, _ = Parse("partition-store-majority")
	if _, err := s.Plan(1, time.Minute, pg); err == nil || !strings.Contains(err.Error(), "at least 3 store nodes") {
		t.Fatalf("store-majority on postgres: %v", err)
	}
}

func TestParseDur(t *testing.T) {
	ttl := 2 * time.Second
	for in, want := range map[string]time.Duration{
		"6s": 6 * time.Second, "3xTTL": 6 * time.Second, "1.5xttl": 3 * time.Second, "TTL": 2 * time.Second,
		"-3xTTL": -6 * time.Second, "+2xTTL": 4 * time.Second, "500ms": 500 * time.Millisecond,
	} {
		d, err := ParseDur(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := d.Resolve(ttl); got != want {
			t.Errorf("%s resolves to %s, want %s", in, got, want)
		}
	}
}
