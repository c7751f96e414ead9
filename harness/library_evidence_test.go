package harness

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// The recorded CURATOR-696 reproduction on Debian's Curator 5.4.0-3 (docs/libraries.md):
// `splitbrain run --store zookeeper --recipe curator-leaderlatch --ttl 5s --resource unfenced
// --nemesis 'kill:target=all-store,on=write:20,for=3xTTL,count=1' --time 120s`, 2026-11-28.
// Re-checked from its history alone it stays invalid: stale writes accepted while two
// candidates believed they led, the one whose old node outlived the outage among them.
func TestCurator696Recorded(t *testing.T) {
	// The checkers write their visualizations into the run directory: check a copy, so the
	// test leaves the committed evidence as it is.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../testdata/libraries/curator-696")); err != nil {
		t.Fatal(err)
	}
	verdict, reasons, res, _, err := runCheckers(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if verdict != VerdictInvalid || !slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, "stale write accepted") }) {
		t.Fatalf("verdict %s %v, want invalid with a stale write accepted", verdict, reasons)
	}
	if lib := res.Params.Library; len(lib) == 0 || !strings.Contains(strings.Join(lib, ","), "libcurator-recipes-java 5.4.0-3") {
		t.Errorf("the run does not record the shipped Curator version: %v", lib)
	}
}
