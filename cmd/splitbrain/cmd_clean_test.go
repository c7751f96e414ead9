package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// Bad flag combinations are refused before anything is swept.
func TestCleanImagesUsage(t *testing.T) {
	for want, args := range map[string][]string{
		"--images and --run do not go together": {"clean", "--images", "--run", "20260101-000000-abcdef"},
		"--profile goes with --images":          {"clean", "--profile", "local"},
		`unknown image profile "nope"`:          {"clean", "--images", "--profile", "nope"},
	} {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, errb.String(), exitUsage, want)
		}
	}
	var out, errb bytes.Buffer
	runMain([]string{"clean", "--help"}, &out, &errb)
	if !strings.Contains(errb.String(), "--images also removes old project images") {
		t.Errorf("clean --help does not explain --images:\n%s", errb.String())
	}
}

// An empty or missing run id never means "everything" (issue 14 item 2): a script's unset
// variable must not sweep other users' runs. None of these reach the Docker engine.
func TestCleanRefusesImplicitAll(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-clean-test.sock") // a sweep would fail with 255, not 64
	for want, args := range map[string][]string{
		"--run: run id \"\" is invalid": {"clean", "--run", ""},
		"--run: run id \"../x\"":        {"clean", "--run", "../x"},
		"say what to remove":            {"clean"},
		"--run and --all do not go":     {"clean", "--all", "--run", "20260101-000000-abcdef"},
		"--yes goes with --all":         {"clean", "--yes", "--run", "20260101-000000-abcdef"},
		"--yes goes with --all ":        {"clean", "--yes"},
	} {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), strings.TrimSpace(want)) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, errb.String(), exitUsage, want)
		}
	}
}

// --all on a terminal asks; anything but yes removes nothing.
func TestCleanAllAsks(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent-clean-test.sock")
	oldIn, oldTTY := cleanStdin, cleanInteractive
	t.Cleanup(func() { cleanStdin, cleanInteractive = oldIn, oldTTY })
	cleanInteractive = func() bool { return true }
	cleanStdin = strings.NewReader("n\n")
	var out, errb bytes.Buffer
	code := runMain([]string{"clean", "--all"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "[y/N]") || !strings.Contains(errb.String(), "nothing removed") {
		t.Fatalf("declined --all: exit %d, stderr %q", code, errb.String())
	}
	// "y" goes on to the engine (absent here: exit 255 naming it), proving the answer was taken.
	cleanStdin = strings.NewReader("y\n")
	errb.Reset()
	if code := runMain([]string{"clean", "--all"}, &out, &errb); code != exitHarness || !strings.Contains(errb.String(), "Docker") {
		t.Fatalf("confirmed --all: exit %d, stderr %q", code, errb.String())
	}
}

// Error messages cap the input they echo and escape control characters (issue 14 item 8).
func TestErrorEchoCappedAndEscaped(t *testing.T) {
	var out, errb bytes.Buffer
	garbage := "\x1b[31m" + strings.Repeat("g", 120000) // one 120 KB item
	code := runMain([]string{"nemesis", "plan", garbage}, &out, &errb)
	if code != exitUsage {
		t.Fatalf("exit %d", code)
	}
	if errb.Len() > 2*maxErrorText {
		t.Errorf("stderr is %d bytes for a %d-byte input", errb.Len(), len(garbage))
	}
	if strings.Contains(errb.String(), "\x1b") {
		t.Error("a raw ESC reached stderr")
	}
	// The nemesis quotes at most 80 bytes of an item; anything longer is cut here.
	if !strings.Contains(errb.String(), "more bytes of this message cut") && !strings.Contains(errb.String(), `"…`) {
		t.Errorf("no cut marker: %.200q", errb.String())
	}
}

// clean's summary does not claim a clean sweep when a network stayed: it names the run that
// still holds it and what to run.
func TestCleanSummaryNamesANetworkInUse(t *testing.T) {
	var b strings.Builder
	printSweep(&b, platform.SweepReport{Containers: []string{"pool-a-redis1"},
		InUse: []platform.NetworkInUse{{Network: "pool-a", Runs: []string{"run-1"}, Containers: []string{"run-1-c1"}}}}, "run pool-a")
	out := b.String()
	for _, want := range []string{"container pool-a-redis1\n", "in use    network pool-a is still used by run run-1 (containers run-1-c1): remove them first (splitbrain clean --run run-1), then clean this run again\n",
		"removed 1 container(s), 0 network(s) (run pool-a); 1 network(s) still in use, see above\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
