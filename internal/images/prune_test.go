package images

import (
	"slices"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
)

func TestPruneOldCandidatesSelection(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	img := func(id, ref, role string, age time.Duration) platform.Image {
		var refs []string
		if ref != "" {
			refs = []string{ref}
		}
		return platform.Image{ID: id, Refs: refs, Role: role, Created: now.Add(-age)}
	}
	cur := Namespace + "candidate:new"
	imgs := []platform.Image{
		img("sha:cur", cur, "candidate", 0),
		img("sha:old", Namespace+"candidate:old", "candidate", time.Hour),
		img("sha:used", Namespace+"candidate:used", "candidate", time.Hour),
		img("sha:recent", Namespace+"candidate:recent", "candidate", time.Minute),
		img("sha:etcd", Namespace+"etcd:old", "etcd", time.Hour),
		img("sha:dangling", "", "candidate", 2*time.Hour),
		img("sha:other", "someone/else:1", "", time.Hour),
	}
	inUse := map[string]bool{"sha:used": true}
	got := pruneSelect(imgs, inUse, keepCandidate(cur, now, now, 15*time.Minute, nil))
	want := []string{Namespace + "candidate:old", "sha:dangling"}
	if !slices.Equal(got, want) {
		t.Fatalf("pruned %v, want %v (never current, used, recent or other roles)", got, want)
	}
	only := func(i platform.Image) bool { return i.ID == "sha:dangling" }
	if got := pruneSelect(imgs, inUse, keepCandidate(cur, now, now, 0, only)); !slices.Equal(got, []string{"sha:dangling"}) {
		t.Fatalf("with a scope: pruned %v", got)
	}
	// Nothing built after the current image goes, whatever the grace.
	if got := pruneSelect(imgs, inUse, keepCandidate(cur, now.Add(-90*time.Minute), now, 0, nil)); !slices.Equal(got, []string{"sha:dangling"}) {
		t.Fatalf("older current: pruned %v", got)
	}
}

func TestPruneKeepsCurrentSet(t *testing.T) {
	imgs := []platform.Image{
		{ID: "a", Refs: []string{"x/etcd:cur"}, Role: "etcd"},
		{ID: "b", Refs: []string{"x/etcd:old"}, Role: "etcd"},
		{ID: "c", Refs: []string{"x/candidate:old1", "x/candidate:cur"}, Role: "candidate"},
		{ID: "d", Refs: []string{"x/candidate:old2"}, Role: "candidate"},
		{ID: "e", Refs: []string{"x/zookeeper:any"}, Role: "zookeeper"},
		{ID: "f", Refs: []string{"x/redis:old"}, Role: "redis"},
	}
	current := map[string]bool{"x/etcd:cur": true, "x/candidate:cur": true}
	unknown := map[string]bool{"zookeeper": true}
	got := pruneSelect(imgs, map[string]bool{"f": true}, keepCurrent(current, unknown))
	if want := []string{"x/etcd:old", "x/candidate:old2"}; !slices.Equal(got, want) {
		t.Fatalf("pruned %v, want %v", got, want)
	}
}
