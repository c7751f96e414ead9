//go:build chaos

package platform_test

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// TestLongLineDoesNotStallOthers: one container prints 100 MiB without a newline (then an
// event-like line); another prints its CLOCK_BOOTTIME reading every 100 ms. The reader must
// cut the long line at 1 MiB with a marker, deliver the line after it, and keep the other
// node's lines flowing: each arrives within latencyBound of being printed (issue 14 item 3;
// before, a 24 MiB line cost 47 s of harness CPU and delayed events by 31 s, so 100 MiB would
// delay them by minutes).
func TestLongLineDoesNotStallOthers(t *testing.T) {
	// A small fraction of the stall the bug caused, yet several times the engine + log
	// pipeline latency seen at load 40 on the 2-core machine.
	const latencyBound = 10 * time.Second
	ctx, eng, net, runID := setup(t)
	img := toolsImage(t, ctx)
	var mu sync.Mutex
	var long []string
	var worst time.Duration
	ticks := 0
	var lastPrinted float64 // the ticker's newest reading received
	_, err := eng.Start(ctx, runID, net, platform.NodeSpec{
		Name: "longline", Role: "test", Image: img, Init: true, LogDir: t.TempDir(),
		Cmd: []string{"sh", "-c", `sleep 1; head -c 104857600 /dev/zero | tr '\0' x; echo; echo '{"kind":"after"}'; sleep 600`},
		OnStdout: func(b []byte) {
			mu.Lock()
			long = append(long, string(b[:min(len(b), 64)])+"…"+string(b[max(0, len(b)-120):]))
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Start(ctx, runID, net, platform.NodeSpec{
		Name: "ticker", Role: "test", Image: img, Init: true,
		// /proc/uptime is CLOCK_BOOTTIME in centiseconds; compare against the harness's own
		// receipt in the same units below.
		Cmd: []string{"sh", "-c", `while true; do cut -d' ' -f1 /proc/uptime; sleep 0.1; done`},
		OnStdout: func(b []byte) {
			printed, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			if err != nil {
				return
			}
			d := time.Duration(uptimeNow()*1e9) - time.Duration(printed*1e9)
			mu.Lock()
			ticks++
			worst = max(worst, d)
			lastPrinted = max(lastPrinted, printed)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(long)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	// The ticker's lines printed while the long line went through are measured once a line
	// it printed after the long line's delivery has arrived.
	delivered := uptimeNow()
	for waitEnd := time.Now().Add(time.Minute); time.Now().Before(waitEnd); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		caughtUp := lastPrinted >= delivered
		mu.Unlock()
		if caughtUp {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if lastPrinted < delivered {
		t.Errorf("no ticker line printed after the long line's delivery arrived within a minute")
	}
	if len(long) < 2 {
		t.Fatalf("long line and the line after it not delivered within 3 min: %q", long)
	}
	if !strings.Contains(long[0], "line cut at 1048576 bytes") || !strings.HasPrefix(long[0], "xxxx") {
		t.Errorf("long line: %q", long[0])
	}
	if !strings.Contains(long[1], `{"kind":"after"}`) {
		t.Errorf("line after the long one: %q", long[1])
	}
	t.Logf("100 MiB line and the next delivered %v after start; ticker: %d lines, worst delay %v", took, ticks, worst)
	if ticks < 10 || worst > latencyBound {
		t.Errorf("the other node's lines: %d, worst delay %v (bound %v)", ticks, worst, latencyBound)
	}
}

// uptimeNow reads CLOCK_BOOTTIME in seconds, the clock /proc/uptime shows.
func uptimeNow() float64 {
	b, _ := os.ReadFile("/proc/uptime")
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
