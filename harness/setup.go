package harness

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/contract"
	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/history/runfile"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/stores"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// testHookAfterStore lets tests fail (or panic) setup once the store and the resource run.
var testHookAfterStore func() error

// This file holds setup's steps, in the order lifecycle (run.go) takes them.

// connect connects to the engine and watches its container events before anything of the
// run starts, so no exit of the run's containers goes unseen.
func (r *run) connect(ctx context.Context) error {
	var err error
	if r.eng, err = platform.Connect(ctx); err != nil {
		return err
	}
	return r.watch.start(ctx, r.eng)
}

// provideImages makes the images the run needs present (built offline where missing), and
// reads a --candidate-cmd executable.
func (r *run) provideImages(ctx context.Context) (*external, stores.Kind, error) {
	var kind stores.Kind
	var err error
	if !r.cfg.storeless() {
		if kind, err = stores.ParseKind(r.cfg.Store); err != nil {
			return nil, "", err
		}
	}
	ext, err := r.externalCandidate()
	if err != nil {
		return nil, "", err
	}
	if r.cfg.CandidateImage != "" {
		if err := images.RequireCandidateImage(ctx, r.eng, r.cfg.CandidateImage); err != nil {
			return nil, "", err
		}
	}
	roles := []images.Role{images.RoleCandidate, images.RoleTools}
	if !r.cfg.storeless() {
		roles = append(roles, stores.ImageRoles(kind)...)
	}
	if ext != nil && !ext.static && len(r.cfg.CandidatePackages) == 0 && ext.library == nil {
		roles = append(roles, images.RoleBase)
	}
	imgLog, err := os.Create(filepath.Join(r.log.logDir(), "images.log"))
	if err != nil {
		return nil, "", err
	}
	step := time.Now()
	pool := r.cfg.StorePool
	cached := false
	if pool != nil {
		r.imgs, cached, err = pool.ensureImages(ctx, r.cfg.profile(), imgLog, roles...)
	} else {
		r.imgs, _, err = images.EnsureWith(ctx, r.cfg.profile(), images.EnsureOptions{Log: imgLog}, roles...)
	}
	if err == nil && ext != nil && len(r.cfg.CandidatePackages) > 0 {
		var res images.Result
		res, err = images.EnsurePackages(ctx, images.EnsureOptions{Log: imgLog}, r.cfg.CandidatePackages)
		ext.image = res.Ref
		if res.Action == "built" {
			r.log.logf("candidate image with %s built in %v: %s", strings.Join(r.cfg.CandidatePackages, ","), res.Duration.Round(time.Second), res.Ref)
		}
	}
	if err == nil && ext != nil && ext.library != nil {
		var res images.Result
		res, err = images.EnsureLibrary(ctx, images.EnsureOptions{Log: imgLog}, ext.library.spec)
		ext.image = res.Ref
		if res.Action == "built" {
			r.log.logf("library image %s (%s) built in %v: %s", ext.library.recipe.Folder, strings.Join(ext.library.versions, ", "), res.Duration.Round(time.Second), res.Ref)
		}
	}
	imgLog.Close()
	if err != nil {
		return nil, "", fmt.Errorf("images (build log %s): %w", imgLog.Name(), err)
	}
	if cached {
		r.log.logf("images (%s profile) ensured earlier in this suite", r.cfg.profile())
	} else {
		r.log.logf("images (%s profile) ready in %v", r.cfg.profile(), time.Since(step).Round(time.Millisecond))
	}
	return ext, kind, nil
}

// startCluster starts the cluster stage (the network and the store cluster, leased from the
// pool or the run's own) and, beside the store, the resource the candidates write to.
func (r *run) startCluster(ctx context.Context, kind stores.Kind) error {
	r.cluster = newClusterLease(r.eng, r.runID, r.log, r.imgs[images.RoleTools], r.prep.schedule.Needs().Network)
	c := r.cluster
	if r.cfg.storeless() {
		if err := c.acquire(ctx, nil, ""); err != nil {
			return err
		}
		r.log.logf("run %s: network %s (%s); no store: candidates elect among themselves on port %d",
			r.runID, c.net.Name, c.net.Subnet, contract.DefaultPeerPort)
		step := time.Now()
		if err := r.startResource(ctx); err != nil {
			return err
		}
		r.log.logf("resource (%s) ready in %v in %s", r.cfg.ResourceMode, time.Since(step).Round(time.Millisecond), r.resource.at)
		return nil
	}
	storeFaketime := faketimeFor(string(kind), r.prep.schedule)
	key := ""
	if r.cfg.StorePool != nil {
		key = poolKey(kind, r.cfg.StoreNodes, r.cfg.profile(), r.imgs[stores.ImageRole(kind)], storeFaketime)
	}
	if err := c.acquire(ctx, r.cfg.StorePool, key); err != nil {
		return err
	}
	if id := c.poolRunID(); id != "" {
		r.watch.addPoolRun(id)
	}
	r.log.logf("run %s: network %s (%s); starting %s", r.runID, c.net.Name, c.net.Subnet, kind)
	// The resource does not depend on the store: start both at once.
	step := time.Now()
	var resErr error
	var resDur time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resErr = r.startResource(ctx)
		resDur = time.Since(step)
	}()
	err := c.launch(ctx, stores.Options{
		Kind: kind, Nodes: r.cfg.StoreNodes, Profile: r.cfg.profile(), Images: r.imgs, LogDir: r.log.logDir(),
		ExtraEnv: storeFaketime.env, ExtraFiles: storeFaketime.files,
	})
	storeDur := time.Since(step)
	wg.Wait()
	if err := errors.Join(err, resErr); err != nil {
		return err
	}
	r.log.logf("%s %s ready in %v (%s); resource (%s) ready in %v in %s", kind, c.store.Version(), storeDur.Round(time.Millisecond),
		strings.Join(c.store.Endpoints(), ","), r.cfg.ResourceMode, resDur.Round(time.Millisecond), r.resource.at)
	if note := c.reuseNote(); note != "" {
		r.log.logf("store: %s", note)
	}
	return nil
}

// startFaults makes the fault plan for the real topology (once the store runs) and starts
// the fault stage: the nemesis, the candidates' clock files, the store fault proxy. The
// nemesis's event triggers and the phase goals watch the live history from here on.
func (r *run) startFaults(ctx context.Context) error {
	if testHookAfterStore != nil {
		if err := testHookAfterStore(); err != nil {
			return err
		}
	}
	plan, err := r.planFaults()
	if err != nil {
		return err
	}
	r.faults = newFaultEnv(r.runID, r.cfg.Store, r.eng, r.imgs, r.log, r.cands, r.cluster, plan)
	_, r.faults.faketime = r.cfg.libraryRecipe()
	if !r.prep.schedule.Empty() || len(plan.Faults) > 0 || len(plan.Triggers) > 0 {
		r.faults.nem = nemesis.New(nemesisEnv{r.faults}, plan.Topology)
		r.cands.starting, r.cands.started = r.faults.nem.NodeStarting, r.faults.nem.NodeStarted
		if r.prep.schedule.Needs().Network {
			r.log.logf("network rules: %s", rulesWay())
		}
	}
	if g := goalFor(r.prep.until, plan); g != nil {
		r.goals = newPhaseGoals(*g)
	}
	r.log.rec.SetObserver(func(e history.Event) {
		r.faults.observe(e)
		r.goals.observe(e)
	})
	names := r.cfg.candidateNames()
	r.faults.fence = &fenceDevice{net: r.cluster.network(), cands: r.cands, log: r.log, names: names, root: r.root}
	if r.faults.clock, err = makeClockDir(r.log.dir, names); err != nil {
		return err
	}
	return r.faults.startProxy(ctx, names)
}

// startCandidates starts the candidates stage: every candidate's container, then the poll.
func (r *run) startCandidates(ctx context.Context, ext *external) error {
	step := time.Now()
	if ext != nil && ext.files != nil {
		var err error
		r.cmdDir, err = writeCandidateDir(r.log.dir, ext.files)
		if err != nil {
			return err
		}
		ext.hostDir = r.cmdDir
	} else if ext != nil && ext.library == nil {
		var err error
		r.cmdDir, err = writeCmdDir(r.log.dir, ext.content)
		if err != nil {
			return err
		}
		ext.hostDir = r.cmdDir
	}
	if (ext != nil && ext.library == nil) || r.cfg.CandidateImage != "" {
		// An application of one's own may run the project's sidecar beside it: it gets the
		// binary, as the candidate image has it. Without one it still runs, without the tool.
		if dir, err := images.SplitbrainBinDir(ctx, io.Discard); err != nil {
			r.log.logf("no splitbrain binary for the candidates (%s not set): %v", contract.EnvSplitbrainBin, err)
		} else {
			r.binDir = dir
		}
	}
	spec := func(name string) (platform.NodeSpec, error) { return r.candidateSpec(name, ext) }
	if err := r.cands.start(ctx, r.eng, r.cluster.network(), podHostOf(r.cluster.storeCluster()), r.cfg.candidateNames(), spec); err != nil {
		return err
	}
	r.log.logf("%d candidates started in %v", r.cfg.Nodes, time.Since(step).Round(time.Millisecond))
	r.watch.setLive(true) // from here on, a container that exits or vanishes is news
	return nil
}

// external describes a --candidate-cmd executable, or a library recipe's adapter.
type external struct {
	content []byte
	hostDir string // the host directory holding it, mounted into every candidate (writeCmdDir)
	static  bool   // a static ELF runs in the FROM-scratch candidate image; others need the Debian base
	image   string // the base plus --candidate-packages, when given; the library's image
	library *libraryCandidate
	files   []dirFile // a candidate directory's tree (nil for a single executable)
}

func (r *run) externalCandidate() (*external, error) {
	if lib, ok := r.cfg.libraryRecipe(); ok {
		lc, err := newLibraryCandidate(lib)
		if err != nil {
			return nil, err
		}
		return &external{library: lc}, nil
	}
	if r.cfg.CandidateCmd == "" {
		return nil, nil
	}
	if fi, err := os.Stat(r.cfg.CandidateCmd); err == nil && fi.IsDir() {
		files, err := readCandidateDir(r.cfg.CandidateCmd)
		if err != nil {
			return nil, fmt.Errorf("--candidate-cmd: %w", err)
		}
		return &external{files: files}, nil
	}
	// Bounded and non-blocking, as checkExecutable checked it: the file may have changed since.
	b, err := runfile.ReadInput(r.cfg.CandidateCmd, maxCandidateBytes)
	if err != nil {
		return nil, fmt.Errorf("--candidate-cmd: %w", err)
	}
	return &external{content: b, static: isStaticELF(b)}, nil
}

// isStaticELF reports whether b is an ELF executable without a program interpreter (read
// from the bytes already read: a second open of the path could block or see another file).
func isStaticELF(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
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

// startResource starts the resource stage beside the store (resource.go).
func (r *run) startResource(ctx context.Context) error {
	s, err := startResource(ctx, r.eng, r.runID, r.cluster.network(), r.imgs[images.RoleCandidate], r.cfg.ResourceMode, r.log)
	r.resource = s
	return err
}

// candidateSpec is the container of candidate name: the contract's environment, the clock
// offset file at "0", and the recipe, the user's executable or the user's image.
func (r *run) candidateSpec(name string, ext *external) (platform.NodeSpec, error) {
	cc := contract.Config{
		NodeID:        name,
		Store:         r.cfg.Store,
		Peers:         peerAddrs(r.cfg.candidateNames()),
		ListenPort:    contract.DefaultPeerPort,
		ResourceURL:   r.resource.url,
		LeaseTTL:      r.cfg.TTL,
		WriteInterval: r.cfg.WriteInterval,
		ClockFile:     candidateClockFile,
		ElectionName:  contract.DefaultElectionName,
		Recipe:        r.cfg.Recipe,
		RenewInterval: r.cfg.RenewInterval,
		RetryInterval: r.cfg.RetryInterval,
		FenceURL:      r.faults.fenceURL(),
	}
	store := r.cluster.storeCluster()
	if store != nil {
		cc.Endpoints = store.Endpoints()
	}
	if eps := r.faults.proxyEndpoints(name); eps != nil {
		cc.Endpoints = eps
	}
	var files []platform.File
	var mounts []platform.Mount
	if dir := r.faults.clockHostDir(name); dir != "" {
		mounts = append(mounts, platform.Mount{HostDir: dir, Target: path.Dir(candidateClockFile)})
	} else {
		files = append(files, platform.File{Path: candidateClockFile, Content: []byte("0"), Mode: 0o666})
	}
	if cr, ok := store.(stores.Credentialed); ok {
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
	if ph := podHostOf(store); ph != nil {
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
	if r.binDir != "" {
		mounts = append(mounts, platform.Mount{HostDir: r.binDir, Target: contract.SplitbrainBinDir})
		env[contract.EnvSplitbrainBin] = contract.SplitbrainBinDir + "/splitbrain"
	}
	for _, kv := range r.cfg.CandidateEnv { // a variant's settings (Validate refused SPLITBRAIN_*)
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}

	spec := platform.NodeSpec{
		Name:     name,
		Role:     "candidate",
		Env:      env,
		Files:    files,
		Mounts:   mounts,
		LogDir:   r.log.logDir(),
		OnStdout: func(line []byte) { r.log.rec.CandidateLine(name, line) },
		OnLogGap: func(why string) { r.log.logGap(name, why) },
	}
	switch {
	case ext != nil && ext.library != nil:
		spec.Image = ext.image
		spec.Entrypoint = []string{libraries.ImageDir + "/" + libraries.Launcher}
		spec.Cmd = ext.library.recipe.Args
		for k, v := range ext.library.faketimeEnv {
			env[k] = v
		}
	case ext != nil:
		spec.Image = r.imgs[images.RoleCandidate]
		switch {
		case ext.image != "":
			spec.Image = ext.image
		case !ext.static:
			spec.Image = r.imgs[images.RoleBase]
		}
		if ext.hostDir == "" {
			return platform.NodeSpec{}, fmt.Errorf("candidate %s: the --candidate-cmd executable was not written to the run directory", name)
		}
		spec.Mounts = append(spec.Mounts, platform.Mount{HostDir: ext.hostDir, Target: externalDir})
		spec.Entrypoint = []string{externalPath}
		if ext.files != nil {
			spec.Entrypoint = []string{externalDir + "/" + candidateDirEntry}
		}
		spec.Cmd = r.cfg.CandidateArgs
	case r.cfg.CandidateImage != "":
		spec.Image = r.cfg.CandidateImage
		spec.Cmd = r.cfg.CandidateArgs
	default:
		spec.Image = r.imgs[images.RoleCandidate]
		spec.Cmd = []string{"candidate", "--recipe", r.cfg.Recipe}
	}
	return spec, nil
}

// planFaults turns the schedule into a plan for the real topology.
func (r *run) planFaults() (nemesis.Plan, error) {
	var storeNodes []string
	if store := r.cluster.storeCluster(); store != nil {
		for _, n := range store.Nodes() {
			storeNodes = append(storeNodes, n.Name())
		}
	}
	topo := nemesis.Topology{Candidates: r.cfg.candidateNames(), StoreNodes: storeNodes, StoreKind: r.cfg.Store, TTL: r.cfg.TTL}
	if r.cfg.Plan != nil {
		plan, err := givenPlan(*r.cfg.Plan, topo)
		if err != nil {
			return nemesis.Plan{}, fmt.Errorf("--nemesis %q: %w", r.cfg.Nemesis, err)
		}
		return plan, nil
	}
	// Planned once: the nominal topology's plan is this run's when the names agree (they
	// do; a launcher that named its nodes otherwise gets a plan of its own).
	if n := r.prep.nominal; n != nil && reflect.DeepEqual(n.Topology, topo) {
		plan := *n
		plan.Faults, plan.Triggers = slices.Clone(n.Faults), slices.Clone(n.Triggers)
		return plan, nil
	}
	plan, err := r.prep.schedule.Plan(r.prep.seed, r.cfg.FaultTime, topo)
	if err != nil {
		return nemesis.Plan{}, fmt.Errorf("--nemesis %q: %w", r.cfg.Nemesis, err)
	}
	return plan, nil
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
