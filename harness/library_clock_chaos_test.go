//go:build chaos

package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// clockProbes print "WALL_NS MONO_NS" every 100 ms in each runtime a library adapter runs
// in, each waiting with a timed wait of its runtime that does not re-check its deadline
// (Python's Event.wait, Java's Object.wait), so a wait libfaketime ends early shows; the Go
// probe is a static binary (CGO_ENABLED=0), as the project's own candidates are.
var clockProbes = map[string]struct {
	file, src string
	cmd       []string
}{
	libraries.RuntimePython: {"probe.py", "import threading, time\ne = threading.Event()\nwhile True:\n    print(time.time_ns(), time.monotonic_ns(), flush=True)\n    e.wait(0.1)\n",
		[]string{"python3", "/probe/probe.py"}},
	libraries.RuntimeNode: {"probe.js", "setInterval(() => console.log(`${BigInt(Date.now()) * 1000000n} ${process.hrtime.bigint()}`), 100);\n",
		[]string{"node", "/probe/probe.js"}},
	libraries.RuntimeJava: {"Probe.java", "public class Probe { public static void main(String[] a) throws Exception { Object o = new Object(); while (true) { System.out.println(System.currentTimeMillis() * 1000000L + \" \" + System.nanoTime()); synchronized (o) { o.wait(100); } } } }\n",
		// Compiled outside libfaketime first, as the curator adapter is at its image build.
		[]string{"sh", "-c", "env -u LD_PRELOAD java -m jdk.compiler/com.sun.tools.javac.Main -nowarn -d /tmp/probe /probe/Probe.java && exec java -cp /tmp/probe Probe"}},
	"go": {"probe.go", "package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\nfunc main() {\n\tstart := time.Now()\n\tfor {\n\t\tfmt.Println(time.Now().UnixNano(), time.Since(start).Nanoseconds())\n\t\ttime.Sleep(100 * time.Millisecond)\n\t}\n}\n",
		[]string{"/probe/probe"}},
}

// A clock fault reaches a library candidate through libfaketime (libraries.FaketimeEnv): the
// test runs a probe in each runtime's library image with that environment, rewrites the
// timestamp file while it runs, as the nemesis does, and reads what moved. CPython, Node and
// the JVM see their wall clock step by the offset and back, while their monotonic clock does
// not move; a static Go binary sees nothing (it reads the clock through the vDSO, never
// through libc, so LD_PRELOAD cannot reach it).
func TestLibraryClockReach(t *testing.T) {
	r := platformtest.NewRun(t, 20*time.Minute)
	byRuntime := map[string]libraries.Recipe{}
	for _, lib := range libraries.Registry {
		img, err := lib.Image()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byRuntime[img.Runtime]; !ok {
			byRuntime[img.Runtime] = lib
		}
	}
	byRuntime["go"] = byRuntime[libraries.RuntimePython] // any image with a shell and libc
	// The ZooKeeper server is a JVM under libfaketime too, with the store's environment
	// (nemesis.FaketimeEnv) and the Java probe.
	const zkServer = "zookeeper-server"
	for _, rt := range []string{libraries.RuntimePython, libraries.RuntimeNode, libraries.RuntimeJava, "go", zkServer} {
		t.Run(rt, func(t *testing.T) {
			var ref, clockFile string
			var env map[string]string
			probe := clockProbes[rt]
			if rt == zkServer {
				probe = clockProbes[libraries.RuntimeJava]
				ref = platformtest.Images(t, r.Ctx, images.Role(storekinds.ZooKeeper))[images.Role(storekinds.ZooKeeper)]
				env, clockFile = nemesis.FaketimeEnv(storekinds.ZooKeeper), nemesis.FaketimeFile
			} else {
				lib, ok := byRuntime[rt]
				if !ok {
					t.Fatalf("no library recipe runs on %s", rt)
				}
				lc, err := newLibraryCandidate(lib)
				if err != nil {
					t.Fatal(err)
				}
				res, err := images.EnsureLibrary(r.Ctx, images.EnsureOptions{}, lc.spec)
				if err != nil {
					t.Fatal(err)
				}
				ref, env, clockFile = res.Ref, lc.faketimeEnv, candidateFaketimeFile
			}
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			if err := os.WriteFile(filepath.Join(dir, probe.file), []byte(probe.src), 0o644); err != nil {
				t.Fatal(err)
			}
			if rt == "go" {
				build := exec.Command("go", "build", "-o", filepath.Join(dir, "probe"), filepath.Join(dir, probe.file))
				build.Env = append(os.Environ(), "CGO_ENABLED=0")
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("build the Go probe: %v\n%s", err, out)
				}
			}
			clock := t.TempDir()
			os.Chmod(clock, 0o755)
			ft := filepath.Join(clock, filepath.Base(clockFile))
			setOffset := func(s string) {
				tmp := ft + ".tmp"
				if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, ft); err != nil {
					t.Fatal(err)
				}
			}
			setOffset("+0.000000000\n")
			var mu sync.Mutex
			var lines []probeLine
			n, err := r.Engine.Start(r.Ctx, r.ID, r.Net, platform.NodeSpec{
				Name: "probe-" + rt, Role: "candidate", Image: ref, Entrypoint: probe.cmd,
				Env:    env, // the file's path is the container's: the mount below puts it there
				Mounts: []platform.Mount{{HostDir: dir, Target: "/probe"}, {HostDir: clock, Target: filepath.Dir(clockFile)}},
				OnStdout: func(line []byte) {
					pl, ok := parseProbe(line)
					if ok {
						mu.Lock()
						lines = append(lines, pl)
						mu.Unlock()
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Terminate(r.Ctx)
			count := func() int { mu.Lock(); defer mu.Unlock(); return len(lines) }
			waitFor := func(what string, d time.Duration, ok func() bool) {
				t.Helper()
				for end := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(end) {
						t.Fatalf("%s: not within %v (%d probe lines)", what, d, count())
					}
				}
			}
			waitFor("first probe line", time.Minute, func() bool { return count() > 0 })
			const offset = 3600 * time.Second
			shifted := func(lo, hi time.Duration) func() bool {
				return func() bool {
					mu.Lock()
					defer mu.Unlock()
					last := lines[len(lines)-1]
					return last.wallSkew >= lo && last.wallSkew <= hi
				}
			}
			setOffset("+3600.000000000\n")
			changed := time.Now()
			if rt == "go" {
				// Twenty probe lines (2 s of its own output) after the change: the other
				// runtimes' clocks moved within 1 s.
				n0 := count()
				waitFor("20 probe lines after the change", 30*time.Second, func() bool { return count() >= n0+20 })
				if shifted(-2*time.Second, 2*time.Second)() {
					t.Logf("go: wall clock unmoved 20 probe lines after the offset was set, as expected (static binary)")
				} else {
					t.Errorf("go: a static binary's wall clock moved under LD_PRELOAD: %+v", lines[len(lines)-1])
				}
				return
			}
			waitFor("wall clock +1h", 5*time.Second, shifted(offset-2*time.Second, offset+2*time.Second))
			t.Logf("%s: wall clock +1h seen %v after the file changed", rt, time.Since(changed).Round(time.Millisecond))
			setOffset("+0.000000000\n")
			waitFor("wall clock back", 5*time.Second, shifted(-2*time.Second, 2*time.Second))
			mu.Lock()
			defer mu.Unlock()
			// The waits last their 100 ms: libfaketime 0.9.10's "monotonic fix" ended the
			// JVM's after 1-60 ms (libraries.Image.FaketimeEnv). A few short ones are
			// allowed for spurious wakeups, which both runtimes permit.
			short := 0
			for i := 1; i < len(lines); i++ {
				if time.Duration(lines[i].mono-lines[i-1].mono) < 90*time.Millisecond {
					short++
				}
			}
			if short > len(lines)/20 {
				t.Errorf("%s: %d of %d timed waits of 100 ms ended before 90 ms: the runtime's timed waits are cut short under this environment", rt, short, len(lines)-1)
			}
			for _, l := range lines {
				if l.monoSkew < -2*time.Second || l.monoSkew > 2*time.Second {
					t.Errorf("%s: monotonic clock moved: %v off the host's", rt, l.monoSkew)
					break
				}
			}
		})
	}
}

type probeLine struct {
	wallSkew, monoSkew time.Duration
	mono               int64 // the probe's own monotonic clock, ns
}

// parseProbe reads "WALL_NS MONO_NS" against the host's clocks at receipt.
func parseProbe(line []byte) (probeLine, bool) {
	f := strings.Fields(string(bytes.TrimSpace(line)))
	if len(f) != 2 {
		return probeLine{}, false
	}
	wall, err1 := strconv.ParseInt(f[0], 10, 64)
	mono, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return probeLine{}, false
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return probeLine{wallSkew: time.Duration(wall - time.Now().UnixNano()), monoSkew: time.Duration(mono - ts.Nano()), mono: mono}, true
}
