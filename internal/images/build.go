package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// builder resolves and builds images for one Ensure or List call.
type builder struct {
	cli     *client.Client
	profile Profile
	opts    EnsureOptions
	logMu   sync.Mutex
}

// enginePingTimeout bounds the builder's first call, as platform's answer timeout bounds the rest.
const enginePingTimeout = 2 * time.Minute

func newBuilder(ctx context.Context, profile Profile, opts EnsureOptions) (*builder, error) {
	cli, err := client.New(client.FromEnv) // negotiates the API version by default
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	// An absent engine fails at once; a busy one may take many seconds to answer on a loaded
	// machine (a fixed 10 s failed tests there), so only a silent one hits this bound.
	pctx, cancel := context.WithTimeout(ctx, enginePingTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		if pctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("the Docker engine did not answer a ping within %v: it is overloaded or hung; wait for the load to drop, or restart dockerd", enginePingTimeout)
		}
		return nil, fmt.Errorf("no Docker engine answers (%v): run `make deps` (scripts/ensure-docker.sh) to start one, or set DOCKER_HOST", err)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &builder{cli: cli, profile: profile, opts: opts}, nil
}

func (b *builder) close() { b.cli.Close() }

// logf writes one progress line; concurrent builds share the writer.
func (b *builder) logf(format string, args ...any) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	fmt.Fprintf(b.opts.Log, format+"\n", args...)
}

// imageInfo is what the engine says about a present image.
type imageInfo struct {
	ID      string
	Size    int64
	Created time.Time
}

// inspect looks an image up locally; found=false without error when it does not exist.
func (b *builder) inspect(ctx context.Context, ref string) (imageInfo, bool, error) {
	res, err := b.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return imageInfo{}, false, nil
		}
		return imageInfo{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	created, _ := time.Parse(time.RFC3339Nano, res.Created)
	return imageInfo{ID: res.ID, Size: res.Size, Created: created}, true, nil
}

// ensure is the body of EnsureWith.
func (b *builder) ensure(ctx context.Context, roles []Role) (Set, []Result, error) {
	if b.profile == ProfileOfficial {
		return b.ensureOfficial(ctx, roles)
	}
	set := Set{}
	results := make([]Result, len(roles))
	var base Result
	for _, r := range roles {
		if r != RoleCandidate { // the candidate image is FROM scratch
			var err error
			if base, err = b.ensureBase(ctx); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(roles))
	sem := make(chan struct{}, b.opts.Concurrency)
	for i, role := range roles {
		if role == RoleBase {
			results[i] = base
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			results[i], errs[i] = b.ensureRole(ctx, role, base.Ref)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil {
			results[i].Action = "failed"
			continue
		}
		set[roles[i]] = r.Ref
		if r.Role == RoleCandidate && r.Action == "built" {
			b.pruneOldCandidates(ctx, r.Ref)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return set, results, err
	}
	return set, results, nil
}

// ensureRole builds one role image FROM parent unless its content tag exists.
func (b *builder) ensureRole(ctx context.Context, role Role, parent string) (Result, error) {
	start := time.Now()
	rec, err := b.recipeFor(ctx, role, parent)
	if err != nil {
		return Result{Role: role}, err
	}
	return b.buildIfMissing(ctx, rec, start)
}

// recipeFor gathers everything that goes into a role image (building binaries as needed).
func (b *builder) recipeFor(ctx context.Context, role Role, parent string) (recipe, error) {
	rec := recipe{role: role, files: scriptFiles(role)}
	if role != RoleCandidate {
		info, ok, err := b.inspect(ctx, parent)
		if err != nil {
			return rec, err
		}
		if !ok {
			return rec, fmt.Errorf("parent image %s of %s is missing: run `splitbrain images build`", parent, role)
		}
		rec.parentID = info.ID
		rec.dockerfile = dockerfileFor(role, parent)
	} else {
		rec.dockerfile = dockerfileFor(role, "scratch")
	}
	if build := roleDefs[role].files; build != nil {
		files, err := build(ctx, b)
		if err != nil {
			return rec, withRole(err, role)
		}
		rec.files = append(rec.files, files...)
	}
	return rec, nil
}

// imageLabels are the labels of a role image; a salt is one too, so that a salted build
// is a new image even where the build cache would give the unsalted one (FROM scratch).
func imageLabels(role Role) map[string]string {
	l := map[string]string{LabelProject: ProjectName, LabelRole: string(role)}
	if salt := os.Getenv(EnvSalt); salt != "" {
		l[LabelSalt] = salt
	}
	return l
}

// withRole fills in the role of a BuildError raised below the role level.
func withRole(err error, role Role) error {
	var be *BuildError
	if errors.As(err, &be) && be.Role == "" {
		be.Role = role
	}
	return err
}

// tmpDirTar is a tar holding only a world-writable sticky /tmp: ADD extracts it with its mode,
// which COPY of a directory would not keep.
func tmpDirTar() []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0)})
	tw.Close()
	return buf.Bytes()
}

// buildIfMissing builds rec under its content tag unless that tag exists.
func (b *builder) buildIfMissing(ctx context.Context, rec recipe, start time.Time) (Result, error) {
	if rec.role == RoleCandidate {
		holdImage(rec.ref()) // before the lookup: no prune can remove it after that
	}
	return b.ensureTag(ctx, rec.role, rec.ref(), "docker build", start, func(ref string) error {
		return b.buildContext(ctx, rec, ref)
	})
}

// cached is the "cached" Result for ref; found tells whether the engine has it.
func (b *builder) cached(ctx context.Context, role Role, ref string) (res Result, found bool, err error) {
	res = Result{Role: role, Ref: ref, Action: "cached"}
	info, found, err := b.inspect(ctx, ref)
	if found {
		res.Size = info.Size
	}
	return res, found, err
}

// ensureTag makes ref present, calling build only when the tag is missing. A lock file per
// tag keeps concurrent splitbrain processes from building the same image twice; the tag is
// looked up again once the lock is held, since another process may have built it meanwhile.
// step names the BuildError step when build returns without the tag appearing.
func (b *builder) ensureTag(ctx context.Context, role Role, ref, step string, start time.Time, build func(ref string) error) (Result, error) {
	if res, ok, err := b.cached(ctx, role, ref); err != nil || ok {
		return res, err
	}
	unlock, err := lockTag(ctx, ref)
	if err != nil {
		return Result{Role: role, Ref: ref}, err
	}
	defer unlock()
	res, ok, err := b.cached(ctx, role, ref)
	if err != nil || ok {
		return res, err
	}
	b.logf("images: building %s", ref)
	if err := build(ref); err != nil {
		return res, err
	}
	info, ok, err := b.inspect(ctx, ref)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, &BuildError{Role: role, Step: step, Err: fmt.Errorf("%s finished but %s is not present", step, ref)}
	}
	res.Action, res.Size, res.Duration = "built", info.Size, time.Since(start)
	b.logf("images: built %s in %.1fs (%s)", ref, res.Duration.Seconds(), HumanSize(res.Size))
	return res, nil
}

// buildContext sends the recipe to the classic builder (which resolves FROM from local
// images and never pulls unless asked) and follows its output.
func (b *builder) buildContext(ctx context.Context, rec recipe, ref string) error {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	epoch := time.Unix(0, 0)
	add := func(h *tar.Header, data []byte) error {
		h.ModTime = epoch
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(rec.dockerfile))}, []byte(rec.dockerfile)); err != nil {
		return err
	}
	for _, f := range rec.files {
		if f.dir {
			if err := add(&tar.Header{Name: f.name + "/", Typeflag: tar.TypeDir, Mode: f.mode}, nil); err != nil {
				return err
			}
			continue
		}
		if err := add(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}, f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	resp, err := b.cli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		Version:     build.BuilderV1,
		Labels:      imageLabels(rec.role),
		CPUShares:   buildShares(ctx),
	})
	if err != nil {
		return &BuildError{Role: rec.role, Step: "send build context", Err: err}
	}
	defer resp.Body.Close()
	return b.followBuild(rec.role, resp.Body)
}

// jsonMessage is the subset of the engine's build/import/pull stream messages we read.
type jsonMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// followBuild reads a build output stream, logging it, tracking the current step and
// turning an error message into a BuildError with the step's last lines.
func (b *builder) followBuild(role Role, body io.Reader) error {
	dec := json.NewDecoder(body)
	step := ""
	tail := &ring{max: tailSize}
	prefix := "[" + string(role) + "] "
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return nil
			}
			return &BuildError{Role: role, Step: step, Log: tail.lines, Err: fmt.Errorf("reading build output: %w", err)}
		}
		text := m.Stream + m.Status
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			if strings.HasPrefix(line, "Step ") {
				step = line
				tail.lines = nil
			}
			tail.add(line)
			b.logf("%s%s", prefix, line)
		}
		if m.Error != "" {
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return &BuildError{Role: role, Step: step, Log: tail.lines, Err: errors.New(msg)}
		}
	}
}

// lockTag takes an exclusive lock file for one tag in the cache directory.
func lockTag(ctx context.Context, ref string) (func(), error) {
	dir, err := cacheDir()
	if err != nil {
		return nil, err
	}
	name := strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".lock"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("build lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// HumanSize formats bytes as MB with one decimal, as docker does (1 MB = 1e6 bytes).
func HumanSize(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

func (b *builder) status(ctx context.Context, role Role, ref, note string) Status {
	st := Status{Role: role, Ref: ref, Note: note}
	info, ok, err := b.inspect(ctx, ref)
	if err != nil {
		st.Note = err.Error()
		return st
	}
	st.Present, st.Size, st.Created = ok, info.Size, info.Created
	return st
}

// pruneOldCandidates runs after Ensure built the candidate image current, so that one new
// image per splitbrain binary does not pile up. Failures are logged, never fatal.
func (b *builder) pruneOldCandidates(ctx context.Context, current string) {
	info, ok, err := b.inspect(ctx, current)
	if err != nil || !ok {
		return
	}
	removed, err := removeProjectImages(ctx, keepCandidate(current, info.Created, time.Now(), candidatePruneGrace, candidatePruneOnly))
	for _, ref := range removed {
		b.logf("images: removed old candidate image %s", ref)
	}
	if err != nil {
		b.logf("images: pruning old candidate images: %v", err)
	}
}

// buildShares is the cpu-shares of a build's containers: the engine's default (0), or the
// minimum in a background build.
func buildShares(ctx context.Context) int64 {
	if inBackground(ctx) {
		return minCPUShares
	}
	return 0
}
