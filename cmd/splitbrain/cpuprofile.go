package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// envCPUProfile names a path prefix: the process writes its CPU profile to <prefix>.<pid>
// (a matrix and its full binary's child each write one), for `go tool pprof`. Where the
// harness's own CPU goes in a tier is measured this way (docs/performance.md).
const envCPUProfile = "SPLITBRAIN_CPUPROFILE"

// startCPUProfile starts the profile envCPUProfile asks for; stop writes it out. Without the
// variable both do nothing.
func startCPUProfile() (stop func(), err error) {
	prefix := os.Getenv(envCPUProfile)
	if prefix == "" {
		return func() {}, nil
	}
	path := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	f, err := os.Create(path)
	if err != nil {
		return func() {}, fmt.Errorf("%s: %w (set it to a writable path prefix, or unset it)", envCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}, fmt.Errorf("%s: %w", envCPUProfile, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
