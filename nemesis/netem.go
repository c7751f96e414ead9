package nemesis

import (
	"os"
	"path/filepath"
	"strings"
)

// ProbeNetem reports whether the host kernel (which every container shares) offers the
// netem qdisc: loaded (/sys/module/sch_netem), or loadable from /lib/modules. It says what
// it found. Delay faults use the TCP fault proxy either way; the probe is for the record.
func ProbeNetem() (bool, string) {
	if _, err := os.Stat("/sys/module/sch_netem"); err == nil {
		return true, "sch_netem is loaded"
	}
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false, "kernel release unknown: " + err.Error()
	}
	release := strings.TrimSpace(string(rel))
	if m, _ := filepath.Glob(filepath.Join("/lib/modules", release, "kernel/net/sched/sch_netem.ko*")); len(m) > 0 {
		return true, "sch_netem module available for " + release
	}
	if b, err := os.ReadFile(filepath.Join("/lib/modules", release, "modules.builtin")); err == nil && strings.Contains(string(b), "sch_netem.ko") {
		return true, "sch_netem built into " + release
	}
	return false, "no sch_netem in kernel " + release + " (neither loaded nor in /lib/modules)"
}
