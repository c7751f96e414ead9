//go:build chaos

package platform_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

// A rule placed through HostNetns lands in the container's namespace, where a tools sidecar
// sharing it (the other way in) lists it, and not in the host's; after a restart the handle
// refuses, since the container has a new namespace.
func TestHostNetnsReachesTheContainersNamespaceOnly(t *testing.T) {
	if ok, why := platform.HostNetnsUsable(); !ok {
		t.Fatalf("this machine cannot enter a container's namespace from the host (%s): the project's machines run the harness as root with an nf_tables iptables", why)
	}
	ctx, eng, net, runID := setup(t)
	img := toolsImage(t, ctx)
	target, err := eng.Start(ctx, runID, net, platform.NodeSpec{
		Name: "target", Role: "test", Image: img, Entrypoint: []string{"sleep", "infinity"}, Init: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := target.HostPID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := platform.OpenHostNetns("target", "0123456789abcdef", pid); err == nil {
		t.Fatal("OpenHostNetns accepted a pid that is not in the named container's cgroup")
	}
	h, err := platform.OpenHostNetns("target", target.ID(), pid)
	if err != nil {
		t.Fatal(err)
	}
	const chain = "SPLITBRAIN-NETNS-TEST"
	if code, out, err := h.Exec(ctx, []string{"iptables", "-w", "5", "-N", chain}); err != nil || code != 0 {
		t.Fatalf("iptables -N through the host: exit %d, %v: %s", code, err, out)
	}
	if code, _, err := h.Exec(ctx, []string{"false"}); err != nil || code != 1 {
		t.Fatalf("exit code of false through the host = %d, %v", code, err)
	}
	side, err := eng.Start(ctx, runID, nil, platform.NodeSpec{
		Name: "side", Role: "tools", Image: img, Entrypoint: []string{"sleep", "infinity"},
		CapAdd: []string{"NET_ADMIN"}, NetworkMode: "container:" + target.ID(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, out, err := side.Exec(ctx, []string{"iptables", "-w", "5", "-S"}); err != nil || !strings.Contains(out, "-N "+chain) {
		t.Fatalf("the sidecar in the same namespace does not list the chain (%v):\n%s", err, out)
	}
	if err := side.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	host, err := exec.CommandContext(ctx, "iptables", "-w", "5", "-S").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S on the host: %v: %s", err, host)
	}
	if strings.Contains(string(host), chain) {
		exec.Command("iptables", "-X", chain).Run()
		t.Fatalf("the chain landed in the host's namespace:\n%s", host)
	}
	if err := target.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Exec(ctx, []string{"iptables", "-S"}); !errors.Is(err, platform.ErrNotRunning) {
		t.Fatalf("after a restart Exec = %v, want a refusal (ErrNotRunning)", err)
	}
	if _, err := platform.OpenHostNetns("self", "", os.Getpid()); err == nil {
		t.Fatal("OpenHostNetns accepted the harness's own pid")
	}
}
