package nemesis

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"syscall"
)

// Process selectors of the pause kind (process=): which processes of a node's container a
// pause stops. A candidate may run more than one process (the k8s-sidecar recipe: the
// application as PID 1 and its leader-election sidecar as a child), and a fault may hit
// either alone.
const (
	ProcessAll     = "all"     // PID 1 and every descendant
	ProcessApp     = "app"     // PID 1 alone, its children keep running
	ProcessSidecar = "sidecar" // the processes whose argv[0] is "sidecar", with their descendants
)

// stopSelected SIGSTOPs the processes of the container whose PID 1 is root that sel names,
// and returns what it stopped.
func stopSelected(root int, sel string) ([]proc, error) {
	switch sel {
	case "", ProcessAll:
		return stopTree(root)
	case ProcessApp:
		st, err := readStat(root)
		if err != nil {
			return nil, fmt.Errorf("read host process %d: %w", root, err)
		}
		if err := syscall.Kill(root, syscall.SIGSTOP); err != nil {
			return nil, fmt.Errorf("SIGSTOP host pid %d: %w", root, err)
		}
		return []proc{{PID: root, Start: st.Start}}, nil
	case ProcessSidecar:
		tree, err := processTree(root)
		if err != nil {
			return nil, err
		}
		var out []proc
		for _, p := range tree[1:] {
			if argv0(p.PID) != ProcessSidecar {
				continue
			}
			stopped, err := stopTree(p.PID)
			out = append(out, stopped...)
			if err != nil {
				return out, err
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no process with argv[0] %q under host pid %d: process=sidecar needs a candidate that runs a sidecar (recipe k8s-sidecar)", ProcessSidecar, root)
		}
		return out, nil
	}
	return nil, fmt.Errorf("process=%s: want %s, %s or %s", sel, ProcessAll, ProcessApp, ProcessSidecar)
}

// argv0 is the base name of a host process's argv[0] ("" when it cannot be read).
func argv0(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", procRoot, pid))
	if err != nil {
		return ""
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return path.Base(string(b))
}
