//go:build chaos

package harness

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// TestResourceServedByTheHarness: where the harness shares the engine's host (this
// machine: root beside a local engine), the resource is a server in the harness's process.
// No resource container exists while the run writes, every decision is in the history and
// in logs/resource.log, config.json says where the resource ran, and the verdict is valid.
// Then the same run with the containers' traffic to it refused by a rule on the host's INPUT
// chain: the harness says why no write arrived, and the run is not valid.
func TestResourceServedByTheHarness(t *testing.T) {
	t.Setenv(ResourceEnv, "host") // fails the run, rather than falling back, if it cannot be served here
	t.Run("served", func(t *testing.T) {
		cfg := baseConfig(t, "redis", "redis-setnx")
		cfg.StoreRoot = t.TempDir()
		cfg.FaultTime, cfg.Recovery = 4*time.Second, 2*time.Second
		containersWhileWriting := make(chan string, 1)
		go func() {
			until := time.Now().Add(5 * time.Minute)
			id := runIDOf(cfg.StoreRoot, until)
			if _, ok := waitForEvents(cfg.StoreRoot, until, nil, func(evs []history.Event) bool {
				return countKind(evs, history.KindDecision) >= 3
			}); !ok || id == "" {
				containersWhileWriting <- "run never reached three decisions"
				return
			}
			out, err := exec.Command("docker", "ps", "-a", "--format", "{{.Names}}", "--filter", "label="+platform.LabelRun+"="+id,
				"--filter", "label="+platform.LabelNode+"=resource").CombinedOutput()
			if err != nil {
				containersWhileWriting <- "docker ps: " + err.Error() + ": " + string(out)
				return
			}
			containersWhileWriting <- strings.TrimSpace(string(out))
		}()
		out, evs := runAndRead(t, runCtx(t), cfg)
		if got := <-containersWhileWriting; got != "" {
			t.Errorf("while the run wrote: resource containers %q, want none", got)
		}
		decisions := countKind(evs, history.KindDecision)
		if decisions < 10 {
			t.Errorf("%d decisions recorded, want at least 10", decisions)
		}
		b, err := os.ReadFile(filepath.Join(out.RunDir, LogsDir, "resource.log"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"kind":"decision"`); n != decisions {
			t.Errorf("resource.log holds %d decisions, the history %d", n, decisions)
		}
		var rc struct {
			ResourceAt string `json:"resource_at"`
			Network    string `json:"network"`
		}
		cb, err := os.ReadFile(filepath.Join(out.RunDir, ConfigFile))
		if err != nil || json.Unmarshal(cb, &rc) != nil {
			t.Fatalf("config.json: %v", err)
		}
		gw := netip.MustParsePrefix(rc.Network).Addr().Next().String()
		if !strings.HasPrefix(rc.ResourceAt, "the harness's process at "+gw+":") {
			t.Errorf("config.json resource_at %q, want the harness's process at the gateway %s", rc.ResourceAt, gw)
		}
		if out.Verdict != VerdictValid {
			t.Errorf("verdict %s: %v", out.Verdict, out.Reasons)
		}
	})
	t.Run("refused-by-the-host", func(t *testing.T) {
		cfg := baseConfig(t, "redis", "redis-setnx")
		cfg.StoreRoot = t.TempDir()
		cfg.FaultTime, cfg.Recovery = 4*time.Second, 2*time.Second
		var rule []string
		testHookHostResource = func(addr netip.AddrPort) {
			rule = []string{"INPUT", "-d", addr.Addr().String() + "/32", "-p", "tcp", "--dport", strconv.Itoa(int(addr.Port())), "-m", "comment",
				"--comment", "splitbrain-test-resource", "-j", "REJECT", "--reject-with", "tcp-reset"}
			if b, err := exec.Command("iptables", append([]string{"-w", "5", "-I"}, rule...)...).CombinedOutput(); err != nil {
				t.Errorf("iptables -I: %v: %s", err, b)
			}
		}
		t.Cleanup(func() {
			testHookHostResource = nil
			if rule != nil {
				if b, err := exec.Command("iptables", append([]string{"-w", "5", "-D"}, rule...)...).CombinedOutput(); err != nil {
					t.Errorf("iptables -D (the rule must not outlive the test): %v: %s", err, b)
				}
			}
		})
		out, evs := runAndRead(t, runCtx(t), cfg)
		if rule == nil {
			t.Fatal("the run served no host resource")
		}
		if n := countKind(evs, history.KindDecision); n != 0 {
			t.Errorf("%d decisions through a refusing host", n)
		}
		var said bool
		for _, e := range evs {
			said = said || e.Kind == history.KindHarnessError && strings.Contains(e.Reason, "no request reached the resource")
		}
		if !said {
			t.Errorf("no harness error says the resource was not reached")
		}
		if out.Verdict == VerdictValid {
			t.Errorf("verdict valid for a run whose writes never reached the resource: %v", out.Reasons)
		}
	})
}
