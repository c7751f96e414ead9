package main

import (
	"bytes"
	"strings"
	"testing"
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
