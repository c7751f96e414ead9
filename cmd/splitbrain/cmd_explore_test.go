package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestExploreRefusesBadInputBeforeAnyRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--faults", "bogus"}, `unknown fault kind "bogus"`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--faults", "pause:target=nowhere"}, "pause takes: pause:target=leader"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--budget", "0"}, "give a time budget"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--max-faults", "0"}, "want at least 1"},
		{[]string{"--store", "redis", "--recipe", "etcd-election", "--time", "10s"}, `runs on store "etcd"`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--nemesis", "pause-leader"}, "nemesis"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--mode", "smart"}, `--mode "smart": want guided or random`},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--resume"}, "--resume needs --corpus FILE"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--mode", "random", "--corpus", "x.json"}, "belong to --mode guided"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--corpus", "/nonexistent/c.json", "--resume"}, "drop --resume"},
		{[]string{"--store", "etcd", "--recipe", "etcd-election", "--time", "10s", "--repro", "-1"}, "--repro must be >= 0"},
	} {
		var out, errOut bytes.Buffer
		code := runMain(append([]string{"explore"}, c.args...), &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("explore %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), exitUsage, c.want)
		}
		if strings.Contains(out.String(), "try 1") {
			t.Errorf("explore %v started a run", c.args)
		}
	}
}
