package harness

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// testHookAfterStore lets tests fail (or panic) setup once the store and the resource run.
var testHookAfterStore func() error

// candidateClockFile is where the clock-offset control goes in candidate containers; the
// path is also passed in SPLITBRAIN_CLOCK_OFFSET_FILE. It must not lie under /splitbrain/,
// which is the candidate image's binary (a unit test checks).
const candidateClockFile = contract.ClockFilePath

// externalPath is where a --candidate-cmd executable is copied into its container.
const externalPath = "/splitbrain-candidate"

// setup starts everything: images, network, store cluster, resource, candidates; then plans
// the faults against the real topology.
func (r *run) setup(ctx context.Context) error {
	var err error
	if r.eng, err = platform.Connect(ctx); err != nil {
		return err
	}
	// Watch before anything starts, so no exit of the run's containers goes unseen.
	if err := r.startWatch(ctx); err != nil {
		return err
	}
	var kind stores.Kind
	if !r.cfg.storeless() {
		if kind, err = stores.ParseKind(r.cfg.Store); err != nil {
			return err
		}
	}
	ext, err := r.externalCandidate()
	if err != nil {
		return err
	}
	if r.cfg.CandidateImage != "" {
		if err := images.RequireCandidateImage(ctx, r.eng, r.cfg.CandidateImage); err != nil {
			return err
		}
	}
	roles := []images.Role{images.RoleCandidate, images.RoleTools}
	if !r.cfg.storeless() {
		roles = append(roles, stores.ImageRoles(kind)...)
	}
	if ext != nil && !ext.static && len(r.cfg.CandidatePackages) == 0 {
		roles = append(roles, images.RoleBase)
	}
	imgLog, err := os.Create(filepath.Join(r.logDir(), "images.log"))
	if err != nil {
		return err
	}
	step := time.Now()
	pool := r.cfg.StorePool
	cached := false
	if pool != nil {
		r.imgs, cached, err = pool.ensureImages(ctx, r.cfg.Profile, imgLog, roles...)
	} else {
		r.imgs, _, err = images.EnsureWith(ctx, r.cfg.Profile, images.EnsureOptions{Log: imgLog}, roles...)
	}
	if err == nil && ext != nil && len(r.cfg.CandidatePackages) > 0 {
		var res images.Result
		res, err = images.EnsurePackages(ctx, images.EnsureOptions{Log: imgLog}, r.cfg.CandidatePackages)
		ext.image = res.Ref
		if res.Action == "built" {
			r.logf("candidate image with %s built in %v: %s", strings.Join(r.cfg.CandidatePackages, ","), res.Duration.Round(time.Second), res.Ref)
		}
	}
	imgLog.Close()
	if err != nil {
		return fmt.Errorf("images (build log %s): %w", imgLog.Name(), err)
	}
	if cached {
		r.logf("images (%s profile) ensured earlier in this suite", r.cfg.Profile)
	} else {
		r.logf("images (%s profile) ready in %v", r.cfg.Profile, time.Since(step).Round(time.Millisecond))
	}
	if r.cfg.storeless() {
		return r.setupStoreless(ctx, ext)
	}
	storeFaketime := faketimeFor(string(kind), r.prep.schedule)
	if pool != nil {
		err = r.leaseStore(ctx, pool, kind, storeFaketime)
	} else {
		r.net, err = r.eng.NewNetwork(ctx, r.runID)
	}
	if err != nil {
		return err
	}
	if r.lease != nil {
		r.watch.mu.Lock()
		r.watch.poolRuns[r.lease.entry.id] = true
		r.watch.mu.Unlock()
	}
	r.logf("run %s: network %s (%s); starting %s", r.runID, r.net.Name, r.net.Subnet, kind)
	// The resource does not depend on the store: start both at once.
	step = time.Now()
	var resErr error
	var resDur time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resErr = r.startResource(ctx)
		resDur = time.Since(step)
	}()
	storeOpts := stores.Options{
		Kind: kind, Nodes: r.cfg.StoreNodes, Profile: r.cfg.Profile, Images: r.imgs, LogDir: r.logDir(),
		ExtraEnv: storeFaketime.env, ExtraFiles: storeFaketime.files,
	}
	var cluster stores.Cluster
	if pool != nil {
		cluster, err = r.launchLeased(ctx, storeOpts)
	} else {
		cluster, err = stores.Launch(ctx, r.eng, r.net, r.runID, storeOpts)
	}
	storeDur := time.Since(step)
	wg.Wait()
	r.cluster = cluster
	if err := errors.Join(err, resErr); err != nil {
		return err
	}
	r.logf("%s %s ready in %v (%s); resource (%s) ready in %v", kind, r.cluster.Version(), storeDur.Round(time.Millisecond),
		strings.Join(r.cluster.Endpoints(), ","), r.cfg.ResourceMode, resDur.Round(time.Millisecond))
	if r.lease != nil {
		r.logf("store: %s", r.lease.note)
	}
	return r.afterStore(ctx, ext)
}

// setupStoreless is setup's tail for --store none: a network, the resource, the candidates.
func (r *run) setupStoreless(ctx context.Context, ext *external) error {
	var err error
	if r.net, err = r.eng.NewNetwork(ctx, r.runID); err != nil {
		return err
	}
	r.logf("run %s: network %s (%s); no store: candidates elect among themselves on port %d",
		r.runID, r.net.Name, r.net.Subnet, contract.DefaultPeerPort)
	step := time.Now()
	if err := r.startResource(ctx); err != nil {
		return err
	}
	r.logf("resource (%s) ready in %v", r.cfg.ResourceMode, time.Since(step).Round(time.Millisecond))
	return r.afterStore(ctx, ext)
}

// afterStore is setup's common tail once the store (or none) and the resource are up: plan
// the faults against the real topology, then start the candidates and their monitors.
func (r *run) afterStore(ctx context.Context, ext *external) error {
	if testHookAfterStore != nil {
		if err := testHookAfterStore(); err != nil {
			return err
		}
	}
	if err := r.planFaults(); err != nil {
		return err
	}
	if err := r.startStoreProxy(ctx); err != nil {
		return err
	}
	return r.startCandidatesAndMonitor(ctx, ext)
}

func (r *run) startCandidatesAndMonitor(ctx context.Context, ext *external) error {
	step := time.Now()
	if err := r.startCandidates(ctx, ext); err != nil {
		return err
	}
	r.logf("%d candidates started in %v", r.cfg.Nodes, time.Since(step).Round(time.Millisecond))
	r.startProcMonitor()
	r.watch.live.Store(true) // from here on, a container that exits or vanishes is news
	return r.writeConfig()
}

func (r *run) logDir() string { return filepath.Join(r.dir, LogsDir) }

// external describes a --candidate-cmd executable.
type external struct {
	content []byte
	static  bool   // a static ELF runs in the FROM-scratch candidate image; others need the Debian base
	image   string // the base plus --candidate-packages, when given
}

func (r *run) externalCandidate() (*external, error) {
	if r.cfg.CandidateCmd == "" {
		return nil, nil
	}
	b, err := os.ReadFile(r.cfg.CandidateCmd)
	if err != nil {
		return nil, fmt.Errorf("--candidate-cmd: %w", err)
	}
	return &external{content: b, static: isStaticELF(r.cfg.CandidateCmd)}, nil
}

// isStaticELF reports whether path is an ELF executable without a program interpreter.
func isStaticELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false // a script or something else: it needs the base image's shell and libc
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

func (r *run) startResource(ctx context.Context) error {
	spec := platform.NodeSpec{
		Name:         "resource",
		Role:         "resource",
		Image:        r.imgs[images.RoleCandidate],
		Cmd:          []string{"resource", "--addr", ":" + resourcePort, "--mode", r.cfg.ResourceMode},
		ExposedPorts: []string{resourcePort + "/tcp"},
		Wait:         wait.ForHTTP("/healthz").WithPort(resourcePort + "/tcp").WithStartupTimeout(30 * time.Second),
		LogDir:       r.logDir(),
		OnStdout:     func(line []byte) { r.rec.ResourceLine("resource", line) },
		OnLogGap:     func(why string) { r.logGap("resource", why) },
	}
	n, err := r.eng.Start(ctx, r.runID, r.net, spec)
	if err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	r.resource = n
	return nil
}

func candidateName(i int) string { return fmt.Sprintf("c%d", i) }

func (r *run) candidateNames() []string {
	out := make([]string, r.cfg.Nodes)
	for i := range out {
		out[i] = candidateName(i + 1)
	}
	return out
}

// candidateSpec is the container of candidate name: the contract's environment, the clock
// offset file at "0", and the recipe, the user's executable or the user's image.
func (r *run) candidateSpec(name string, ext *external) (platform.NodeSpec, error) {
	cc := contract.Config{
		NodeID:        name,
		Store:         r.cfg.Store,
		Peers:         peerAddrs(r.candidateNames()),
		ListenPort:    contract.DefaultPeerPort,
		ResourceURL:   "http://resource:" + resourcePort,
		LeaseTTL:      r.cfg.TTL,
		WriteInterval: r.cfg.WriteInterval,
		ClockFile:     candidateClockFile,
		ElectionName:  contract.DefaultElectionName,
		Recipe:        r.cfg.Recipe,
		RenewInterval: r.cfg.RenewInterval,
		RetryInterval: r.cfg.RetryInterval,
		FenceURL:      r.fenceURL(),
	}
	if r.cluster != nil {
		cc.Endpoints = r.cluster.Endpoints()
	}
	if r.proxy != nil {
		cc.Endpoints = r.proxy.Endpoints(name)
	}
	var files []platform.File
	var mounts []platform.Mount
	if r.clockDir != "" {
		mounts = append(mounts, platform.Mount{HostDir: r.candidateClockHostDir(name), Target: path.Dir(candidateClockFile)})
	} else {
		files = append(files, platform.File{Path: candidateClockFile, Content: []byte("0"), Mode: 0o666})
	}
	if cr, ok := r.cluster.(stores.Credentialed); ok {
		cred, err := cr.Credentials(name, cc.Endpoints)
		if err != nil {
			return platform.NodeSpec{}, fmt.Errorf("candidate %s: store credentials: %w", name, err)
		}
		cc.StoreUser = cred.User
		if cred.Kubeconfig != nil {
			cc.Kubeconfig = contract.KubeconfigPath
			files = append(files, platform.File{Path: contract.KubeconfigPath, Content: cred.Kubeconfig, Mode: 0o644})
		}
	}
	if ph := r.podHost(); ph != nil {
		cc.PodName = ph.PodName(name) // the harness creates it before every start (pods.go)
	}
	env := map[string]string{}
	for _, kv := range cc.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if r.cfg.LeaderWorkSet {
		env[contract.EnvLeaderWork] = r.cfg.LeaderWork.String() // "0s" turns the gap off
	}
	// Interpreters buffer a pipe; these ask them to flush every line (the contract requires it).
	env["PYTHONUNBUFFERED"] = "1"

	spec := platform.NodeSpec{
		Name:     name,
		Role:     "candidate",
		Env:      env,
		Files:    files,
		Mounts:   mounts,
		LogDir:   r.logDir(),
		OnStdout: func(line []byte) { r.rec.CandidateLine(name, line) },
		OnLogGap: func(why string) { r.logGap(name, why) },
	}
	switch {
	case ext != nil:
		spec.Image = r.imgs[images.RoleCandidate]
		switch {
		case ext.image != "":
			spec.Image = ext.image
		case !ext.static:
			spec.Image = r.imgs[images.RoleBase]
		}
		spec.Files = append(spec.Files, platform.File{Path: externalPath, Content: ext.content, Mode: 0o755})
		spec.Entrypoint = []string{externalPath}
	case r.cfg.CandidateImage != "":
		spec.Image = r.cfg.CandidateImage
	default:
		spec.Image = r.imgs[images.RoleCandidate]
		spec.Cmd = []string{"candidate", "--recipe", r.cfg.Recipe}
	}
	return spec, nil
}

// startCandidates starts c1..cN at about the same time, so none gets a head start. Each
// process-start is recorded before its container starts, so it precedes the candidate's
// first event both in time and in the file.
func (r *run) startCandidates(ctx context.Context, ext *external) error {
	names := r.candidateNames()
	if err := r.makeClockDir(names); err != nil {
		return err
	}
	procs := make([]*proc, len(names))
	r.mu.Lock()
	for i, name := range names {
		procs[i] = &proc{name: name}
		r.cands = append(r.cands, procs[i])
		r.byName[name] = procs[i]
	}
	r.mu.Unlock()
	return platform.Each(len(procs), 0, func(i int) error {
		p := procs[i]
		p.mu.Lock()
		defer p.mu.Unlock()
		r.createPod(ctx, p)
		r.markStarting(p)
		spec, err := r.candidateSpec(p.name, ext)
		if err != nil {
			r.markStartFailed(p)
			return err
		}
		n, err := r.eng.Start(ctx, r.runID, r.net, spec)
		if err != nil {
			r.markStartFailed(p)
			return fmt.Errorf("candidate %s: %w", p.name, err)
		}
		p.node = n
		r.markStarted(ctx, p)
		return nil
	})
}

// planFaults turns the schedule into a plan for the real topology and prepares the nemesis.
func (r *run) planFaults() error {
	var storeNodes []string
	for _, n := range (nemesisEnv{r}).StoreNodes() {
		storeNodes = append(storeNodes, n.Name())
	}
	topo := nemesis.Topology{Candidates: r.candidateNames(), StoreNodes: storeNodes, StoreKind: r.cfg.Store, TTL: r.cfg.TTL}
	plan, err := r.prep.schedule.Plan(r.prep.seed, r.cfg.FaultTime, topo)
	if r.cfg.Plan != nil {
		plan, err = givenPlan(*r.cfg.Plan, topo)
	}
	if err != nil {
		return fmt.Errorf("--nemesis %q: %w", r.cfg.Nemesis, err)
	}
	r.plan = plan
	if g := r.goal(); g != nil {
		r.goals = newPhaseGoals(*g)
	}
	if !r.prep.schedule.Empty() || len(plan.Faults) > 0 || len(plan.Triggers) > 0 {
		r.nem = nemesis.New(nemesisEnv{r}, plan.Topology)
	}
	r.rec.SetObserver(r.observeEvent) // event triggers and the phase goals watch the live history
	return nil
}

// givenPlan checks that a concrete plan (replay, shrink) names this run's nodes: its
// targets were chosen for them.
func givenPlan(p nemesis.Plan, topo nemesis.Topology) (nemesis.Plan, error) {
	if !slices.Equal(p.Topology.Candidates, topo.Candidates) || !slices.Equal(p.Topology.StoreNodes, topo.StoreNodes) {
		return nemesis.Plan{}, fmt.Errorf("the given fault plan was made for candidates %v and store nodes %v, but this run has %v and %v: use the same --nodes and --store-nodes",
			p.Topology.Candidates, p.Topology.StoreNodes, topo.Candidates, topo.StoreNodes)
	}
	p.Faults = slices.Clone(p.Faults)
	return p, nil
}

type faketimeSetup struct {
	env   map[string]string
	files []platform.File
}

// faketimeFor puts libfaketime in front of the store servers when the schedule skews a
// store node's clock and the store supports it; otherwise the servers run untouched (a
// preloaded library is not free, and the JVM is sensitive to it).
func faketimeFor(storeKind string, sched nemesis.Schedule) faketimeSetup {
	if ok, _ := nemesis.ClockSupported(storeKind); !ok || !sched.Needs().StoreClock {
		return faketimeSetup{}
	}
	return faketimeSetup{
		env:   nemesis.FaketimeEnv(storeKind),
		files: []platform.File{{Path: nemesis.FaketimeFile, Content: []byte(nemesis.FaketimeInitial), Mode: 0o644}},
	}
}
