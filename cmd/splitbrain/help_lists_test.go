package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/candidates"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// userLists runs every command whose output enumerates stores, recipes or fault kinds and
// returns the output by command line.
func userLists(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, args := range [][]string{
		{"--help"},
		{"run", "--help"},
		{"explore", "--help"},
		{"up", "--help"},
		{"candidate", "check", "--help"},
		{"candidate", "--list"},
		{"nemesis", "plan", "--help"},
		{"nemesis", "list"},
	} {
		var stdout, stderr bytes.Buffer
		code := runMain(args, &stdout, &stderr)
		if code != exitValid && code != exitUsage { // flag's --help may exit either way
			t.Fatalf("splitbrain %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		out[strings.Join(args, " ")] = stdout.String() + stderr.String()
	}
	return out
}

// checkUserLists fails for every store, recipe or fault kind that a list leaves out, and
// for a nemesis list whose sections disagree about which stores have a leader.
func checkUserLists(t *testing.T) {
	t.Helper()
	lists := userLists(t)
	has := func(cmd, word string) {
		t.Helper()
		if !regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(word) + `($|[^\w-])`).MatchString(lists[cmd]) {
			t.Errorf("`splitbrain %s` does not name %q", cmd, word)
		}
	}
	// The --store flag's own help names every store (not just some other line of the page).
	storeFlag := map[string]string{}
	for _, cmd := range []string{"run --help", "explore --help", "up --help", "candidate check --help", "nemesis plan --help"} {
		storeFlag[cmd] = flagUsage(lists[cmd], "store")
		lists[cmd+" --store"] = storeFlag[cmd]
	}
	for _, d := range storekinds.All() {
		for cmd := range storeFlag {
			has(cmd+" --store", d.Name)
		}
		has("nemesis list", d.Name)
		if !strings.Contains(strings.Join(strings.Fields(lists["--help"]), " "), d.Title) {
			t.Errorf("`splitbrain --help` does not name store %s (%q)", d.Name, d.Title)
		}
		// --store-nodes (up: --nodes) help gives its default.
		for _, cmd := range []string{"run --help", "nemesis plan --help", "up --help"} {
			if want := d.Name + " " + itoa(d.DefaultNodes); !strings.Contains(lists[cmd], want) {
				t.Errorf("`splitbrain %s`: --store-nodes help lacks %q", cmd, want)
			}
		}
	}
	for _, cmd := range []string{"run --help", "explore --help", "nemesis plan --help"} {
		has(cmd+" --store", storekinds.None)
	}
	for _, r := range candidates.Registry.Names() {
		for _, cmd := range []string{"run --help", "explore --help", "candidate --list"} {
			has(cmd, r)
		}
	}
	for _, r := range candidates.Registry.NamesFor(storekinds.None) {
		if !strings.Contains(lists["run --help"], r) {
			t.Errorf("run --help: store none's recipes lack %s", r)
		}
	}
	list := lists["nemesis list"]
	for _, k := range nemesis.Kinds() {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(k.Name) + `\s`).MatchString(list) {
			t.Errorf("nemesis list has no FAULT KINDS entry for %s", k.Name)
		}
	}
	proxyLine := lineWith(list, "through the TCP fault proxy")
	for _, k := range nemesis.Kinds() {
		if inLine := regexp.MustCompile(`\b` + regexp.QuoteMeta(k.Name) + `\b`).MatchString(strings.SplitN(proxyLine, "(every store)", 2)[0]); inLine != k.Proxy {
			t.Errorf("nemesis list's proxy line %q: %s listed %v, its traits say Proxy %v", proxyLine, k.Name, inLine, k.Proxy)
		}
	}
	for _, p := range nemesis.ProfileNames() {
		has("nemesis list", p)
	}

	// No self-contradiction: the stores named under TARGETS for store-leader, and under
	// PROFILES for partition-store-majority, are those STORE SUPPORT says yes for.
	var leaderYes []string
	support := section(list, "STORE SUPPORT")
	for _, d := range storekinds.All() {
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(d.Name) + `\s.*$`).FindString(support)
		cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(row), -1)
		if len(cols) < 6 {
			t.Errorf("STORE SUPPORT row for %s has %d columns: %q", d.Name, len(cols), row)
			continue
		}
		if (cols[4] == "yes") != d.HasLeader {
			t.Errorf("STORE SUPPORT says store-leader %q for %s, its definition says HasLeader %v", cols[4], d.Name, d.HasLeader)
		}
		if cols[4] == "yes" {
			leaderYes = append(leaderYes, d.Name)
		}
	}
	slices.Sort(leaderYes)
	for _, where := range []string{lineWith(section(list, "TARGETS"), "store-leader"), lineWith(section(list, "PROFILES"), "partition-store-majority")} {
		m := regexp.MustCompile(`\(([^()]*)\)\s*$`).FindStringSubmatch(where)
		if m == nil {
			t.Errorf("nemesis list line %q names no stores with a leader", where)
			continue
		}
		named := strings.Split(m[1], ", ")
		slices.Sort(named)
		if !slices.Equal(named, leaderYes) {
			t.Errorf("nemesis list line %q names %v; STORE SUPPORT says store-leader yes for %v", where, named, leaderYes)
		}
	}
}

func TestHelpListsEveryStoreRecipeAndFaultKind(t *testing.T) { checkUserLists(t) }

// TestNewStoreKindReachesEveryList declares a throwaway store kind the way a new store is
// declared (one definition in internal/storekinds) and checks every list and the planner
// see it: nothing else names stores by hand.
func TestNewStoreKindReachesEveryList(t *testing.T) {
	remove := storekinds.Add(storekinds.Def{Name: "fakestore", Title: "FakeStore", Role: storekinds.Etcd,
		DefaultNodes: 4, MinNodes: 1, MaxNodes: 5, NodeStem: "fake", HasLeader: true,
		ClockHow: "a throwaway kind of this test"})
	defer remove()
	checkUserLists(t)
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"nemesis", "plan", "--store", "fakestore", "--time", "30s", "kill:target=node:fake-4,at=1s"}, &stdout, &stderr); code != exitValid {
		t.Fatalf("nemesis plan on the new store: exit %d: %s", code, stderr.String())
	}
	var plan struct{ Faults []struct{ Target string } }
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil || len(plan.Faults) != 1 {
		t.Fatalf("plan: %v %s", err, stdout.String())
	}
}

// TestNemesisPlanStoreNone previews a peer schedule: store none has candidates only, and a
// store target is refused with the reason.
func TestNemesisPlanStoreNone(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"nemesis", "plan", "--store", "none", "--time", "30s", "pause-leader"}, &stdout, &stderr); code != exitValid {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var plan struct{ Faults []struct{ Kind string } }
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil || len(plan.Faults) == 0 {
		t.Fatalf("plan: %v %s", err, stdout.String())
	}
	stderr.Reset()
	if code := runMain([]string{"nemesis", "plan", "--store", "none", "--store-nodes", "3", "pause-leader"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--store-nodes") {
		t.Fatalf("--store none --store-nodes 3: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := runMain([]string{"nemesis", "plan", "--store", "none", "kill:target=store-node"}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("a store target without a store: exit %d, %s", code, stderr.String())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// flagUsage is the usage text of flag -name in a flag.PrintDefaults listing.
func flagUsage(help, name string) string {
	m := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `( \w+)?\n((?:    \t.*\n?)+)`).FindStringSubmatch(help)
	if m == nil {
		return ""
	}
	return m[2]
}

func lineWith(text, word string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			return l
		}
	}
	return ""
}

// section is the part of nemesis list from heading to the next blank line.
func section(text, heading string) string {
	_, after, ok := strings.Cut(text, "\n"+heading)
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(after, "\n\n")
	return s
}

// TestHelpCommandsAligned: every command's summary starts in one column, whatever the longest
// command name (lease-sidecar once pushed its own summary out of line).
func TestHelpCommandsAligned(t *testing.T) {
	var b strings.Builder
	printHelp(&b)
	col := -1
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(line, "  ") || commands[f[0]].summary == "" {
			continue
		}
		at := strings.Index(line[2+len(f[0]):], f[1]) + 2 + len(f[0])
		if col == -1 {
			col = at
		} else if at != col {
			t.Errorf("summary of %s starts at column %d, the others at %d:\n%s", f[0], at, col, line)
		}
	}
	if col == -1 {
		t.Fatal("no command lines in the help")
	}
}
