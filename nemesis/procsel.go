package nemesis

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
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
		if err := sigstop(root); err != nil {
			return nil, fmt.Errorf("SIGSTOP host pid %d: %w", root, err)
		}
		return []proc{{PID: root, Start: st.Start}}, nil
	case ProcessSidecar:
		// PID 1's direct children first (one small read, no scan of the host's /proc: a
		// fault triggered by an event needs the stop quickly), the whole tree as fallback.
		kids := children(root)
		if len(kids) == 0 {
			tree, err := processTree(root)
			if err != nil {
				return nil, err
			}
			kids = tree[1:]
		}
		var out []proc
		for _, p := range kids {
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

// children lists the direct children of pid from /proc/PID/task/*/children: each thread
// lists the children it forked (a Go program forks from any of its threads). nil when the
// kernel does not offer the lists.
func children(pid int) []proc {
	tasks, err := os.ReadDir(fmt.Sprintf("%s/%d/task", procRoot, pid))
	if err != nil {
		return nil
	}
	var out []proc
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("%s/%d/task/%s/children", procRoot, pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				if st, err := readStat(c); err == nil {
					out = append(out, proc{PID: c, Start: st.Start})
				}
			}
		}
	}
	return out
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
