package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestUpUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"--store is required": {"up"},
		"valid stores are consul, dynamodb, etcd, kubernetes": {"up", "--store", "mysql"},
		"is negative":                      {"up", "--store", "redis", "--for", "-1s"},
		"runs exactly 1 node":              {"up", "--store", "postgres", "--nodes", "3"},
		"unknown image profile":            {"up", "--store", "redis", "--profile", "dockerhub"},
		"run id \"BAD ID\" is invalid":     {"clean", "--run", "BAD ID"},
		"unexpected argument \"leftover\"": {"clean", "leftover"},
	}
	for want, args := range cases {
		var out, errb bytes.Buffer
		code := runMain(args, &out, &errb)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, errb.String())
		}
		if !strings.Contains(errb.String(), want) {
			t.Errorf("%v: stderr %q lacks %q", args, errb.String(), want)
		}
	}
}
