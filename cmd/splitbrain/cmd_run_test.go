package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// Bad command lines are refused with exit 64 before anything starts, naming the problem.
func TestRunUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--recipe", "etcd-election", "--time", "1s"}, "no store given"},
		{[]string{"run", "--store", "mysql", "--recipe", "etcd-election", "--time", "1s"}, `unknown store "mysql"`},
		{[]string{"run", "--store", "etcd", "--recipe", "nope", "--time", "1s"}, `unknown recipe "nope"`},
		{[]string{"run", "--store", "redis", "--recipe", "etcd-election", "--time", "1s"}, `runs on store "etcd", not "redis"`},
		{[]string{"run", "--store", "etcd", "--recipe", "etcd-election"}, "--time"},
		{[]string{"run", "--store", "etcd", "--recipe", "etcd-election", "--time", "1s", "--workload", "storm"}, "valid workloads are handoff, steady"},
		{[]string{"run", "--store", "etcd", "--candidate-cmd", "/does/not/exist", "--time", "1s"}, "does not exist"},
		{[]string{"run", "--store", "etcd", "--recipe", "etcd-election", "--time", "1s", "--require", "speed"}, `--require "speed"`},
		{[]string{"run", "--store", "etcd", "--recipe", "etcd-election", "--time", "1s", "--nemesis", "teleport:target=leader"}, "--nemesis"},
		{[]string{"run", "--store", "etcd", "--recipe", "etcd-election", "--time", "1s", "extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := runMain(tc.args, &out, &errOut)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %s)", tc.args, code, exitUsage, errOut.String())
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, errOut.String(), tc.want)
		}
	}
}

// A command line with several problems gets all of them in one answer.
func TestRunListsEveryProblem(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runMain([]string{"run", "--bogus", "--store", "mysql", "--nodes", "x", "--recipe", "nope", "--nemesis", "teleport:target=leader", "--require", "speed", "extra"}, &out, &errOut)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for _, want := range []string{"-bogus", `unknown store "mysql"`, `invalid value "x" for flag -nodes`, `unknown recipe "nope"`, "--nemesis", `--require "speed"`, `unexpected argument "extra"`, "--time"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}

// A harness failure exits 255 unless the history recorded up to it proves a violation.
func TestRunExitCodes(t *testing.T) {
	fail := errors.New("teardown: engine went away")
	for _, c := range []struct {
		verdict string
		err     error
		want    int
	}{
		{harness.VerdictValid, nil, exitValid},
		{harness.VerdictInvalid, nil, exitInvalid},
		{harness.VerdictUnknown, nil, exitUnknown},
		{harness.VerdictInvalid, fail, exitInvalid},
		{harness.VerdictUnknown, fail, exitHarness},
	} {
		var out, errOut bytes.Buffer
		code, err := runExit(context.Background(), &harness.Outcome{Verdict: c.verdict}, c.err, false, &out, &errOut)
		if code != c.want {
			t.Errorf("verdict %s, error %v: exit %d, want %d", c.verdict, c.err, code, c.want)
		}
		if c.err != nil && c.want == exitInvalid && (err != nil || !strings.Contains(errOut.String(), "engine went away")) {
			t.Errorf("a proven violation after a harness failure must still name the failure: err %v stderr %q", err, errOut.String())
		}
	}
	if code, _ := runExit(context.Background(), nil, fail, false, io.Discard, io.Discard); code != exitHarness {
		t.Errorf("no outcome: exit %d", code)
	}
	// A signal during teardown (harness.Run's error once the lifecycle had finished): 255,
	// and the message says the run was interrupted but healed and torn down.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	teardownSignal := fmt.Errorf("cancelled during teardown: %w", context.Canceled)
	code, err := runExit(ctx, &harness.Outcome{Verdict: harness.VerdictUnknown}, teardownSignal, false, io.Discard, io.Discard)
	if code != exitHarness || err == nil || !strings.Contains(err.Error(), "interrupted; healed and torn down") || !strings.Contains(err.Error(), "during teardown") {
		t.Errorf("signal during teardown: exit %d, error %v; want 255 and an error saying it was interrupted during teardown", code, err)
	}
}

// Topology problems are refused before anything starts (issue 14 item 7): with no Docker
// engine reachable, an accepted command line would fail with 255, not 64.
func TestRunRefusesTopologyProblemsBeforeStart(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-run-test.sock")
	base := []string{"run", "--store", "redis", "--recipe", "redis-setnx", "--time", "10s"}
	many := strings.Repeat("pause:for=5s,every=6s;", 40)
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--store-nodes", "100"}, "--store-nodes 100: store redis runs exactly 1 node"},
		{[]string{"--nemesis", "pause:for=20s"}, "--nemesis"},
		{[]string{"--nemesis", "pause:target=node:c9,for=2s"}, "c9"},
		{[]string{"--nemesis", many}, "faults in effect at once"},
	} {
		var out, errOut bytes.Buffer
		args := append(append([]string(nil), base...), tc.extra...)
		code := runMain(args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%.120q: exit %d, stderr %.300q; want %d and %q", tc.extra, code, errOut.String(), exitUsage, tc.want)
		}
	}
}

// --store none runs get the same pre-start checks, and no input makes the planner build an
// unbounded plan: with no Docker engine reachable, an accepted command line would fail with
// 255 after trying to create a network (once it also ran out of memory and left one behind).
func TestRunRefusesUnboundedOrStorelessProblemsBeforeStart(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-run-test.sock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "none", "--recipe", "raft", "--nemesis", "pause:for=1ns,every=2ns"}, "at least 1ms"},
		{[]string{"--store", "none", "--recipe", "raft", "--nemesis", "pause:for=1ms,every=2ms"}, "more than 1000"},
		{[]string{"--store", "none", "--recipe", "raft", "--nemesis", "delay-leader"}, "--store none run has none"},
		{[]string{"--store", "none", "--recipe", "raft", "--nemesis", "pause:target=node:c9,for=1s"}, "c9"},
		{[]string{"--store", "none", "--recipe", "raft", "--nemesis", "pause:for=20s"}, "fault phase is only 10s"},
		{[]string{"--store", "redis", "--recipe", "redis-setnx", "--ttl", "1ns", "--nemesis", "pause-leader"}, "--ttl 1ns"},
		{[]string{"--store", "redis", "--recipe", "redis-setnx", "--time", "100000h", "--nemesis", "pause-leader"}, "--time 100000h"},
		{[]string{"--store", "redis", "--recipe", "redis-setnx", "--nemesis", strings.Repeat("pause:target=leader,on=elected,for=1s;", 40)}, "in effect at once"},
		{[]string{"--store", "redis", "--recipe", "redis-setnx", "--nemesis", "pause:target=leader,for=2s,at=NaNxTTL"}, "at: bad TTL multiple"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"run", "--time", "10s"}, tc.args...)
		code := runMain(args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%.120q: exit %d, stderr %.300q; want %d and %q", tc.args, code, errOut.String(), exitUsage, tc.want)
		}
	}
}

// --shard "" (an unset variable in a CI script) is an error, not "the whole matrix".
func TestMatrixEmptyShardRefused(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-run-test.sock")
	for _, args := range [][]string{{"matrix", "--shard", ""}, {"matrix", "--shard="}, {"matrix", "--shard", " "}} {
		var out, errOut bytes.Buffer
		code := runMain(args, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "--shard is empty") {
			t.Errorf("%q: exit %d, stderr %.300q; want 64 and a message about the empty --shard", args, code, errOut.String())
		}
	}
}

// A negative --idle-extra is refused before anything runs, naming what is allowed.
func TestMatrixNegativeIdleExtraRefused(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-run-test.sock")
	var out, errOut bytes.Buffer
	code := runMain([]string{"matrix", "--parallel", "7", "--idle-extra", "-1"}, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "--idle-extra -1: want 0 (none) or more") {
		t.Errorf("exit %d, stderr %.300q; want 64 and a message about --idle-extra", code, errOut.String())
	}
}
