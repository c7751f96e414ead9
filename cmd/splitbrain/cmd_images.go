package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/images"
)

func init() {
	register(command{name: "images", summary: "build (offline) or list the container images", run: runImages})
}

// imagesUsage lists the roles from images.Roles, so a new store's image shows up here.
func imagesUsage() string {
	var roles []string
	for _, r := range images.Roles {
		roles = append(roles, string(r))
	}
	return `usage:
  splitbrain images build [--profile local|official] [--role ` + strings.Join(roles, ",") + `] [--quiet]
  splitbrain images list  [--profile local|official]
The default profile comes from SPLITBRAIN_IMAGE_PROFILE (else local).`
}

func runImages(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, imagesUsage())
		if len(args) == 0 {
			return exitUsage, usagef("missing subcommand: build or list")
		}
		return exitValid, nil
	}
	switch args[0] {
	case "build":
		return runImagesBuild(ctx, args[1:], stdout, stderr)
	case "list":
		return runImagesList(ctx, args[1:], stdout, stderr)
	}
	return exitUsage, usagef("unknown images subcommand %q: want build or list", args[0])
}

// profileFlag parses --profile with the environment's default.
func profileFlag(value string) (images.Profile, error) {
	if value == "" {
		p, err := images.DefaultProfile()
		if err != nil {
			return "", usagef("%v", err)
		}
		return p, nil
	}
	p, err := images.ParseProfile(value)
	if err != nil {
		return "", usagef("--profile: %v", err)
	}
	return p, nil
}

func runImagesBuild(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("images build", stderr)
	profile := fs.String("profile", "", "image profile: local (build offline) or official (pull upstream); default $"+images.EnvProfile+" or local")
	roleList := fs.String("role", "", "comma-separated roles to ensure (default: all)")
	quiet := fs.Bool("quiet", false, "do not stream build output, print only the summary")
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	p, err := profileFlag(*profile)
	if err != nil {
		return exitUsage, err
	}
	roles, err := images.ParseRoles(*roleList)
	if err != nil {
		return exitUsage, usagef("--role: %v", err)
	}
	opts := images.EnsureOptions{Log: stderr}
	if *quiet {
		opts.Log = io.Discard
	}
	start := time.Now()
	_, results, err := images.EnsureWith(ctx, p, opts, roles...)
	for _, r := range results {
		if r.Ref == "" {
			continue
		}
		action := r.Action
		if action == "failed" {
			action = "FAILED"
		}
		fmt.Fprintf(stdout, "%-10s %-7s %6.1fs %10s  %s\n", r.Role, action, r.Duration.Seconds(), images.HumanSize(r.Size), r.Ref)
	}
	fmt.Fprintf(stdout, "total %.1fs (profile %s)\n", time.Since(start).Seconds(), p)
	if err != nil {
		var be *images.BuildError
		if errors.As(err, &be) {
			return exitHarness, err // its message carries the failing step and the log tail
		}
		return exitHarness, err
	}
	return exitValid, nil
}

func runImagesList(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("images list", stderr)
	profile := fs.String("profile", "", "image profile: local or official; default $"+images.EnvProfile+" or local")
	if err := parseFlags(fs, args, false); err != nil {
		return exitUsage, err
	}
	p, err := profileFlag(*profile)
	if err != nil {
		return exitUsage, err
	}
	list, err := images.List(ctx, p)
	if err != nil {
		return exitHarness, err
	}
	fmt.Fprintf(stdout, "%-10s %-8s %10s  %-20s %s\n", "ROLE", "PRESENT", "SIZE", "CREATED", "REF")
	for _, s := range list {
		present, size, created := "no", "-", "-"
		if s.Present {
			present, size = "yes", images.HumanSize(s.Size)
			if !s.Created.IsZero() {
				created = s.Created.Local().Format("2006-01-02 15:04:05")
			}
		}
		ref := s.Ref
		if ref == "" {
			ref = "?"
		}
		fmt.Fprintf(stdout, "%-10s %-8s %10s  %-20s %s", s.Role, present, size, created, ref)
		if s.Note != "" {
			fmt.Fprintf(stdout, "  (%s)", s.Note)
		}
		fmt.Fprintln(stdout)
	}
	return exitValid, nil
}
