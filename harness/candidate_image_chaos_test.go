//go:build chaos

package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// buildCandidateImage wraps the static executable bin into a FROM-scratch image carrying the
// project label under a unique splitbrain.invalid/ tag, removed when the test ends.
func buildCandidateImage(t *testing.T, bin string) string {
	t.Helper()
	content, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	eng := platformtest.Connect(t, ctx)
	cli := eng.Client()

	dockerfile := "FROM scratch\nCOPY candidate /candidate\nENTRYPOINT [\"/candidate\"]\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"candidate", 0o755, content}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	tag := fmt.Sprintf("%stest-external-candidate:%d-%d", images.Namespace, os.Getpid(), time.Now().UnixNano())
	// Registered before the build, so a build that fails half-way is cleaned up as well.
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer rcancel()
		if _, err := cli.ImageRemove(rctx, tag, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !strings.Contains(err.Error(), "No such image") {
			t.Errorf("remove test image %s: %v", tag, err)
		}
	})
	resp, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1, // resolves FROM locally, never pulls
		Labels:      map[string]string{images.LabelProject: images.ProjectName, images.LabelRole: "test-candidate"},
	})
	if err != nil {
		t.Fatalf("build candidate image: %v", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("build candidate image: reading output: %v", err)
		}
		if m.Error != "" {
			t.Fatalf("build candidate image: %s", m.Error)
		}
	}
	info, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatalf("built image %s not found: %v", tag, err)
	}
	if info.Config == nil || info.Config.Labels[images.LabelProject] != images.ProjectName {
		t.Fatalf("image %s lacks the label %s=%s", tag, images.LabelProject, images.ProjectName)
	}
	return tag
}

// TestRunCandidateImage: a user image whose entrypoint speaks the contract runs via
// --candidate-image (no recipe, no copied executable), elects, writes, is judged valid
// without faults, and the run leaves nothing behind.
func TestRunCandidateImage(t *testing.T) {
	t.Parallel() // nothing timed; runs beside the other untimed top-level tests
	tag := buildCandidateImage(t, buildExternal(t))
	cfg := baseConfig(t, "etcd", "")
	cfg.CandidateImage = tag
	out, evs := runAndRead(t, runCtx(t), cfg)

	var summary string
	for _, e := range evs {
		if e.Kind == history.KindRunStart {
			summary = e.Spec
		}
	}
	if !strings.Contains(summary, "candidate-image="+tag) {
		t.Errorf("run-start does not name the candidate image %s: %q", tag, summary)
	}
	if out.Counts.Elections == 0 || countKind(evs, history.KindElected) == 0 {
		t.Fatalf("the image's candidate was never elected (counts %+v)", out.Counts)
	}
	if out.Counts.WritesAccepted == 0 {
		t.Fatalf("no write of the image's candidate accepted (counts %+v)", out.Counts)
	}
	if _, problems := resourceBlocks(evs); len(problems) > 0 {
		t.Errorf("interleaving at the resource: %v", problems)
	}
	if out.Counts.ContractViolations > 0 {
		t.Errorf("%d contract violations", out.Counts.ContractViolations)
	}
	if out.Verdict != VerdictValid {
		t.Errorf("verdict %s without faults: %v", out.Verdict, out.Reasons)
	}
	if out.Leftovers != "" {
		t.Errorf("teardown reported leftovers: %s", out.Leftovers)
	}
	if !strings.Contains(out.RunDir, "image-") {
		t.Errorf("run dir %s does not name the image", out.RunDir)
	}
}

// TestRunCandidateImageMissing: an image that is not on the engine ends the run with an
// error that says so and how to fix it (nothing can be pulled here), and leaves nothing.
func TestRunCandidateImageMissing(t *testing.T) {
	tag := "splitbrain.invalid/missing-candidate:" + strings.ReplaceAll(platform.NewRunID(), "-", "")
	cfg := baseConfig(t, "redis", "")
	cfg.CandidateImage = tag
	out, err := Run(runCtx(t), cfg)
	if out != nil {
		assertNoLeftovers(t, out.RunID)
	}
	want := "candidate image " + tag + " is not present on this Docker engine (no registry can be reached here): build or load it first, e.g. docker build -t " + tag + " ."
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run error %v\nwant it to contain %q", err, want)
	}
}
