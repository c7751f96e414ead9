package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/harness"
)

// envStandInServe makes this test binary a stand-in for `splitbrain matrix --serve` (TestMain):
// it answers each row name with a result whose verdict is the name, row "a" once row "b" came,
// row "controls" with the control lines it read, exits with status 3 on row "crash", and
// writes its pool figures when its input ends.
const envStandInServe = "SPLITBRAIN_TEST_STAND_IN_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(envStandInServe) != "" {
		standInServe()
		return
	}
	os.Exit(m.Run())
}

func standInServe() {
	var mu sync.Mutex
	write := func(l serveLine) {
		b, _ := json.Marshal(l)
		mu.Lock()
		fmt.Printf("%s\n", b)
		mu.Unlock()
	}
	answer := func(name string) {
		write(serveLine{Result: &resultRecord{Name: name, Observed: Observed{Verdict: "verdict-" + name}}})
	}
	var controls []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch name := sc.Text(); {
		case strings.HasPrefix(name, "{"):
			controls = append(controls, name)
		case name == "controls":
			write(serveLine{Result: &resultRecord{Name: name, Observed: Observed{Verdict: strings.Join(controls, ";")}}})
		case name == "crash":
			fmt.Fprintln(os.Stderr, "stand-in: crashing on purpose")
			os.Exit(3)
		case name == "a": // answered after b
		case name == "b":
			answer("b")
			answer("a")
		default:
			answer(name)
		}
	}
	write(serveLine{Stats: &harness.PoolStats{Launched: 1, Reused: 2}})
	os.Exit(0)
}

// TestFullBinaryHandsRowsToOneChild: the rows handed to the full binary go to one serving
// child and each gets its own result, whatever order they come back in; a child that exits
// fails the row it had, naming it, and the next row starts another; Close collects the
// pool figures of the children that ended normally.
func TestFullBinaryHandsRowsToOneChild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envStandInServe, "1")
	full := UseFullBinary(exe)
	full.MatrixFile, full.Tier, full.StoreRoot, full.Parallel = "matrix.yaml", TierDefault, t.TempDir(), 4

	var wg sync.WaitGroup
	got := map[string]Result{}
	var mu sync.Mutex
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := full.Run(context.Background(), Case{Name: name})
			mu.Lock()
			got[name] = r
			mu.Unlock()
		}()
		if name == "a" { // a is handed first
			waitFor(t, func() bool {
				full.mu.Lock()
				defer full.mu.Unlock()
				return full.child != nil && full.child.waiting["a"] != nil
			})
		}
	}
	wg.Wait()
	for _, name := range []string{"a", "b"} {
		if r := got[name]; r.Err != nil || r.Observed.Verdict != "verdict-"+name {
			t.Errorf("row %s: verdict %q, error %v; want verdict-%s", name, r.Observed.Verdict, r.Err, name)
		}
	}
	first := full.child

	r := full.Run(context.Background(), Case{Name: "crash"})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "exited before the row's result") || !strings.Contains(r.Err.Error(), "crashing on purpose") {
		t.Errorf("row on a child that exits: error %v; want one naming the exit and the child's output", r.Err)
	}
	if r = full.Run(context.Background(), Case{Name: "c"}); r.Err != nil || r.Observed.Verdict != "verdict-c" {
		t.Errorf("row after the child exited: verdict %q, error %v; want a new child's answer", r.Observed.Verdict, r.Err)
	}
	if full.child == first {
		t.Error("the row after the exit went to the exited child")
	}
	full.Retire("kubernetes", 0)
	if r = full.Run(context.Background(), Case{Name: "controls"}); r.Observed.Verdict != `{"retire":{"store":"kubernetes","nodes":0}}` {
		t.Errorf("the child read control lines %q; want the one retire line", r.Observed.Verdict)
	}
	if st := full.Close(); st != (harness.PoolStats{Launched: 1, Reused: 2}) {
		t.Errorf("Close: pool figures %+v; want the second child's {1 2 0} (the first exited without any)", st)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond) // sleep: a poll of in-process state with a deadline
	}
}

// TestServeAnswersEveryName: the serving child answers a name it does not know with a failed
// result naming it, writes its pool figures when its input ends, and ends on an interrupt
// without waiting for its input to.
func TestServeAnswersEveryName(t *testing.T) {
	var out strings.Builder
	cases := []Case{{Name: "known/row"}}
	if err := Serve(context.Background(), cases, strings.NewReader("no/such/row\n\n"), &out, Options{Parallel: 2}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a result and the pool figures, got %q", out.String())
	}
	var res, stats serveLine
	if err := json.Unmarshal([]byte(lines[0]), &res); err != nil || res.Result == nil || res.Result.Name != "no/such/row" || !strings.Contains(res.Result.Err, `no row "no/such/row"`) {
		t.Errorf("first line %s (%v): want a failed result naming the unknown row", lines[0], err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &stats); err != nil || stats.Stats == nil || *stats.Stats != (harness.PoolStats{}) {
		t.Errorf("last line %s (%v): want the pool figures, nothing started", lines[1], err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	in, w := io.Pipe() // never closed: the parent is still there
	defer w.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cases, in, io.Discard, Options{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after an interrupt: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not end on the interrupt while its input stayed open")
	}
}
