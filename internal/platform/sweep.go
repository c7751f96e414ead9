package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/moby/moby/client"
)

// SweepFilter selects what Sweep removes: every project object, or one run's.
type SweepFilter struct {
	RunID string // "" = every object carrying the project label
}

// SweepReport says what a sweep removed.
type SweepReport struct {
	Containers []string // container names
	Networks   []string // network names
	Thawed     []string // containers that were frozen and thawed before removal
	// InUse are networks not removed because containers outside the sweep are attached.
	InUse []NetworkInUse
}

// NetworkInUse is a network a sweep could not remove because containers it did not remove
// are attached: a pooled store cluster's network, joined by the runs that leased it.
type NetworkInUse struct {
	Network    string
	Runs       []string // run ids of the attached containers, sorted
	Containers []string // their names
}

// Hint says who holds the network and what removes it: those runs first, then this one.
func (n NetworkInUse) Hint() string {
	if len(n.Runs) == 0 {
		return fmt.Sprintf("network %s is still used by containers %s, not splitbrain's: remove them, then clean this run again",
			n.Network, strings.Join(n.Containers, ", "))
	}
	who := "run " + n.Runs[0]
	if len(n.Runs) > 1 {
		who = "runs " + strings.Join(n.Runs, ", ")
	}
	var cmds []string
	for _, id := range n.Runs {
		cmds = append(cmds, "splitbrain clean --run "+id)
	}
	return fmt.Sprintf("network %s is still used by %s (containers %s): remove them first (%s), then clean this run again",
		n.Network, who, strings.Join(n.Containers, ", "), strings.Join(cmds, " && "))
}

// networkUsers lists the containers still attached to a network; ok is false when none are
// (the removal failed for another reason).
func (e *Engine) networkUsers(ctx context.Context, id, name string) (NetworkInUse, bool) {
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("network", id)})
	if err != nil || len(cs.Items) == 0 {
		return NetworkInUse{}, false
	}
	use := NetworkInUse{Network: name}
	for _, c := range cs.Items {
		cname := c.ID[:12]
		if len(c.Names) > 0 {
			cname = strings.TrimPrefix(c.Names[0], "/")
		}
		use.Containers = append(use.Containers, cname)
		if run := c.Labels[LabelRun]; run != "" && !slices.Contains(use.Runs, run) {
			use.Runs = append(use.Runs, run)
		}
	}
	sort.Strings(use.Runs)
	sort.Strings(use.Containers)
	return use, true
}

// Empty tells whether nothing was found.
func (r SweepReport) Empty() bool { return len(r.Containers) == 0 && len(r.Networks) == 0 }

func (f SweepFilter) filters() client.Filters {
	fl := client.Filters{}.Add("label", LabelProject+"="+ProjectName)
	if f.RunID != "" {
		fl = fl.Add("label", LabelRun+"="+f.RunID)
	}
	return fl
}

// Sweep removes the selected containers (thawing frozen ones first), then their networks.
// It works on a cancelled ctx and goes on past individual failures, returning them joined.
func (e *Engine) Sweep(ctx context.Context, f SweepFilter) (SweepReport, error) {
	if f.RunID != "" {
		if err := ValidateRunID(f.RunID); err != nil {
			return SweepReport{}, err
		}
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	var rep SweepReport
	var errs []error
	cs, err := e.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: f.filters()})
	if err != nil {
		return rep, fmt.Errorf("list containers: %w", err)
	}
	// Sidecars sharing a netns go first: a container whose netns another uses cannot leave cleanly.
	sort.SliceStable(cs.Items, func(i, j int) bool {
		return strings.HasPrefix(cs.Items[i].HostConfig.NetworkMode, "container:") && !strings.HasPrefix(cs.Items[j].HostConfig.NetworkMode, "container:")
	})
	for _, c := range cs.Items {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if string(c.State) == StatusPaused {
			rep.Thawed = append(rep.Thawed, name)
		}
		if err := removeContainer(cctx, e.cli, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
			continue
		}
		rep.Containers = append(rep.Containers, name)
	}
	ns, err := e.cli.NetworkList(cctx, client.NetworkListOptions{Filters: f.filters()})
	if err != nil {
		return rep, errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if err := removeNetwork(cctx, e.cli, n.ID); err != nil {
			if use, ok := e.networkUsers(cctx, n.ID, n.Name); ok {
				rep.InUse = append(rep.InUse, use)
				errs = append(errs, errors.New(use.Hint()))
				continue
			}
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			continue
		}
		rep.Networks = append(rep.Networks, n.Name)
	}
	return rep, errors.Join(errs...)
}

// Leftovers lists what still exists of a run: containers (any state), frozen containers and
// networks. Tests assert it is empty after teardown.
type Leftovers struct {
	Containers []string
	Paused     []string
	Networks   []string
}

// Empty tells whether the run left nothing behind.
func (l Leftovers) Empty() bool {
	return len(l.Containers) == 0 && len(l.Paused) == 0 && len(l.Networks) == 0
}

func (l Leftovers) String() string {
	return fmt.Sprintf("containers %v, paused %v, networks %v", l.Containers, l.Paused, l.Networks)
}

// Leftovers reports the objects of runID that still exist.
func (e *Engine) Leftovers(ctx context.Context, runID string) (Leftovers, error) {
	if err := ValidateRunID(runID); err != nil {
		return Leftovers{}, err
	}
	f := SweepFilter{RunID: runID}
	var l Leftovers
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f.filters()})
	if err != nil {
		return l, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		name := strings.TrimPrefix(strings.Join(c.Names, ","), "/")
		l.Containers = append(l.Containers, name)
		if string(c.State) == StatusPaused {
			l.Paused = append(l.Paused, name)
		}
	}
	ns, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f.filters()})
	if err != nil {
		return l, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		l.Networks = append(l.Networks, n.Name)
	}
	return l, nil
}
