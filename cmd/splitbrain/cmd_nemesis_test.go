package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNemesisList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"nemesis", "list"}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"pause", "freeze", "kill", "partition", "clock", "loss", "NOT SUPPORTED",
		"majorities-ring", "bridge", "one-way", "store-leader", "pause-leader", "= pause:target=leader,for=3xTTL",
		"clock skew of the server", "redis", "TRIGGERS", "on=elected", "on=write[:N]", "on=step:NAME", "on=fault-end", "after=", "cooldown"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("nemesis list lacks %q", want)
		}
	}
}

func TestNemesisPlan(t *testing.T) {
	var a, b, errb bytes.Buffer
	args := []string{"nemesis", "plan", "--seed", "3", "--time", "30s", "mixed"}
	if code := runMain(args, &a, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	runMain(args, &b, &errb)
	if a.String() != b.String() {
		t.Fatal("same seed printed different plans")
	}
	var plan struct{ Faults []struct{ Kind string } }
	if err := json.Unmarshal(a.Bytes(), &plan); err != nil || len(plan.Faults) == 0 {
		t.Fatalf("plan output: %v %s", err, a.String())
	}
	errb.Reset()
	if code := runMain([]string{"nemesis", "plan", "pause:for=-1s"}, &a, &errb); code != exitUsage || !strings.Contains(errb.String(), "negative") {
		t.Fatalf("bad spec: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := runMain([]string{"nemesis", "plan", "--store", "postgres", "partition-store-majority"}, &a, &errb); code != exitUsage || !strings.Contains(errb.String(), "at least 3 store nodes") {
		t.Fatalf("impossible shape: exit %d, %s", code, errb.String())
	}
	// Store nodes carry their real names: node:redis-5 exists in a default redis-multi run.
	a.Reset()
	if code := runMain([]string{"nemesis", "plan", "--store", "redis-multi", "partition:peer=node:redis-5"}, &a, &errb); code != exitValid || !strings.Contains(a.String(), `"redis-5"`) {
		t.Fatalf("node:redis-5 on redis-multi: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := runMain([]string{"nemesis", "plan", "--store", "zookeeper", "--store-nodes", "9", "none"}, &a, &errb); code != exitUsage || !strings.Contains(errb.String(), "1..7") {
		t.Fatalf("9 zookeeper nodes: exit %d, %s", code, errb.String())
	}
	if code := runMain([]string{"nemesis", "bogus"}, &a, &errb); code != exitUsage {
		t.Fatalf("unknown subcommand: exit %d", code)
	}
}
