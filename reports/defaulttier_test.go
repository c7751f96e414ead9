package reports

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tierRow is one row of suite/matrix.yaml's default tier as the index sees it (store,
// recipe, fault as written in the matrix, resource, workload), for an index fixture of the
// size `make chaos` leaves. The fixture history decides the verdict: fenced rows are valid,
// the rest invalid.
type tierRow struct {
	store, recipe, fault string
	unfenced, invalid    bool // invalid: the matrix expects it (a negative control, a known break)
	workload             string
}

// canonical is the schedule `splitbrain run` writes to config.json for a named profile.
var canonical = map[string]string{
	"kill-leader":                 "kill:target=leader,for=1xTTL,every=5xTTL",
	"pause-leader":                "pause:target=leader,for=3xTTL,every=6xTTL",
	"freeze-leader":               "freeze:target=leader,for=3xTTL,every=6xTTL",
	"partition-store-majority":    "partition:target=store-leader,mode=drop,shape=store-majority,for=3xTTL,every=6xTTL",
	"partition-leader-from-store": "partition:mode=drop,shape=leader-from-store,for=3xTTL,every=6xTTL",
	"loss":                        "loss:target=leader,dir=both,p=0.3,peer=store,for=3xTTL,every=6xTTL",
	"clock-bump-leader":           "clock:target=leader,delta=-3xTTL,op=bump,for=3xTTL,every=6xTTL",
	"delay-leader":                "delay:target=leader,dir=both,latency=1xTTL,for=4xTTL,every=8xTTL",
	"half-open-leader":            "half-open:target=leader,for=3xTTL,every=6xTTL",
	"reset-leader":                "reset:target=leader,for=3xTTL,every=6xTTL",
	"bandwidth-leader":            "bandwidth:target=leader,dir=both,rate=1,for=4xTTL,every=8xTTL",
	"slow-close-kill-leader":      "slow-close:target=all-candidates,close-delay=3xTTL,dir=out,for=6xTTL,every=10xTTL,at=1xTTL,jitter=0s; kill:target=leader,for=1xTTL,every=10xTTL,at=2xTTL,jitter=0s",
}

const (
	evictPartitioned = "partition:shape=leader-from-store,mode=drop,at=1xTTL,for=6xTTL,every=12xTTL,jitter=0s; evict:target=leader,at=2xTTL,for=5xTTL,every=12xTTL,jitter=0s"
	halves           = "partition:shape=halves,among=candidates,for=8s"
)

// defaultTier is the default tier of suite/matrix.yaml on 2026-11-25 (49 rows).
var defaultTier = []tierRow{
	{"etcd", "etcd-election", "none", false, false, ""}, {"etcd", "etcd-election", "kill-leader", false, false, ""},
	{"etcd", "etcd-election", "pause-leader", false, false, ""}, {"etcd", "etcd-election", "partition-store-majority", false, false, ""},
	{"zookeeper", "zookeeper-seq", "pause-leader", false, false, ""}, {"zookeeper", "zookeeper-seq", "freeze-leader", false, false, ""},
	{"zookeeper", "zookeeper-seq", "pause-leader", true, false, ""},
	{"postgres", "postgres-advisory", "kill-leader", false, false, ""}, {"postgres", "postgres-advisory", "pause-leader", false, false, ""},
	{"consul", "consul-lock", "none", false, false, ""}, {"consul", "consul-lock", "kill-leader", false, false, ""},
	{"consul", "consul-lock", "pause-leader", false, false, ""},
	{"redis", "redis-setnx", "pause-leader", false, false, ""}, {"redis", "redis-setnx", "pause-leader", true, false, ""},
	{"redis", "redis-setnx", "partition-leader-from-store", false, false, ""}, {"redis", "redis-setnx", "loss", false, false, ""},
	{"redis-multi", "redlock", "none", false, false, ""}, {"redis-multi", "redlock", "kill-leader", false, false, ""},
	{"redis-multi", "redlock", "pause-leader", false, false, ""}, {"redis-multi", "redlock", "pause-leader", true, false, ""},
	{"redis-multi", "redlock", "clock:op=bump,target=all-candidates,delta=+10xTTL,for=6xTTL,at=1s,count=1 + kill:target=leader,for=9xTTL,at=8s,count=1 + kill:target=leader,on=fault-end,after=1s,for=1xTTL,count=1", false, true, ""},
	{"kubernetes", "k8s-lease", "none", false, false, ""}, {"kubernetes", "k8s-lease", "kill-leader", false, false, ""},
	{"kubernetes", "k8s-lease", "pause-leader", false, false, ""}, {"kubernetes", "k8s-lease", "pause-leader", true, false, ""},
	{"kubernetes", "leader-for-life", "none", false, false, ""}, {"kubernetes", "leader-for-life", "kill-leader", false, false, ""},
	{"kubernetes", "leader-for-life", evictPartitioned, false, false, ""}, {"kubernetes", "leader-for-life", evictPartitioned, true, false, ""},
	{"dynamodb", "dynamodb-lease", "none", false, false, ""}, {"dynamodb", "dynamodb-lease", "kill-leader", false, false, ""},
	{"dynamodb", "dynamodb-lease", "pause-leader", false, false, ""}, {"dynamodb", "dynamodb-lease", "pause-leader", true, false, ""},
	{"dynamodb", "dynamodb-lease", "kill:target=leader,for=5xTTL,at=3s,count=1 + kill:target=store-node,for=1xTTL,at=3500ms,count=1", false, true, ""},
	{"redis", "naive-lease", "none", false, true, "handoff"}, {"redis", "naive-lease", "clock-bump-leader", false, true, ""},
	{"redis", "redis-split-incr", "pause:target=leader,for=2xTTL,every=3xTTL", false, true, "handoff"},
	{"redis", "redis-incr-after-setnx", "pause:on=step:lock-acquired,for=2xTTL", true, true, "handoff"},
	{"none", "raft", "kill-leader", false, false, ""},
	{"none", "bully", halves, true, true, ""}, {"none", "ring", halves, true, true, ""},
	{"etcd", "cmd:etcd_candidate.py", "none", false, true, "handoff"}, {"redis", "cmd:zombie.sh", "pause-leader", true, false, ""},
	{"etcd", "cmd:lease_go", "none", false, true, "handoff"},
	{"redis", "redis-setnx", "delay-leader", false, false, ""}, {"redis", "redis-setnx", "half-open-leader", false, false, ""},
	{"redis", "redis-setnx", "reset-leader", false, false, ""}, {"redis", "redis-setnx", "bandwidth-leader", false, false, ""},
	{"redis", "redis-setnx", "slow-close-kill-leader", false, false, ""},
}

var negativeControls = map[string]bool{"naive-lease": true, "redis-split-incr": true, "redis-incr-after-setnx": true, "bully": true, "ring": true}

// makeDefaultTierStore writes one checked and rendered run per default-tier row into store.
func makeDefaultTierStore(t testing.TB, store string) {
	t.Helper()
	started := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for i, row := range defaultTier {
		f := defaultFixture()
		f.store, f.recipe, f.nemesis, f.negative = row.store, row.recipe, row.fault, negativeControls[row.recipe]
		f.schedule = row.fault
		if s, ok := canonical[row.fault]; ok {
			f.schedule = s
		}
		f.schedule = strings.ReplaceAll(f.schedule, " + ", "; ")
		f.unfenced = row.unfenced
		if row.unfenced {
			f.zombieWrites = 20 // the zombie leader's tenure: forty resource reasons
		}
		if row.invalid && !row.unfenced {
			f.thirdToken = 1 // a token that goes backwards: what a broken recipe does
		}
		f.workload = row.workload
		f.started = started.Add(time.Duration(i) * 40 * time.Second)
		name := row.store + "-" + row.recipe + "-" + row.fault
		if len(row.fault) > 40 {
			name = fmt.Sprintf("%s-%s-custom%d", row.store, row.recipe, i)
		}
		if row.unfenced {
			name += "-unfenced"
		}
		name = regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "_")
		dir := filepath.Join(store, name, f.started.Format("20060102T150405.000Z"))
		writeRun(t, dir, f)
		if err := RenderRun(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := RenderIndex(store); err != nil {
		t.Fatal(err)
	}
}

// TestIndexOfDefaultTier: the default tier's leaderboard has one row per recipe and store,
// chips named by fault kind (never a schedule), and the unfenced runs in their own column.
func TestIndexOfDefaultTier(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if keep := os.Getenv("SPLITBRAIN_KEEP_FIXTURE"); keep != "" { // to look at the index by hand
		store = filepath.Join(keep, t.Name(), "store")
	}
	makeDefaultTierStore(t, store)
	b, err := os.ReadFile(filepath.Join(store, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))
	recipes := map[string]bool{}
	for _, r := range defaultTier {
		recipes[r.recipe+"/"+r.store] = true
	}
	if n := strings.Count(page, `<tr class="lb-row"`); n != len(recipes) {
		t.Errorf("leaderboard has %d rows, want one per recipe and store (%d)", n, len(recipes))
	}
	chips := regexp.MustCompile(`class="chip (\w+)"[^>]*data-kind="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(chips) != len(defaultTier) { // every row has its own schedule, resource or recipe
		t.Errorf("%d chips for %d runs", len(chips), len(defaultTier))
	}
	for _, c := range chips {
		if len(c[2]) > 24 {
			t.Errorf("chip named %q: a chip names fault kinds, not a schedule", c[2])
		}
	}
	for _, want := range []string{`data-kind="clock+kill"`, `data-kind="partition+evict"`, `data-kind="slow-close+kill"`, `data-kind="no fault"`} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks chip %s", want)
		}
	}
	k8s := page[strings.Index(page, `data-row="k8s-lease (kubernetes)"`):]
	k8s = k8s[:strings.Index(k8s, "</tr>")]
	cells := strings.Split(k8s, "<td")
	if len(cells) != 8 || !strings.Contains(cells[7], `data-verdict="invalid" data-kind="pause"`) || strings.Contains(cells[3], "invalid") {
		t.Errorf("k8s-lease: want valid fenced chips and an invalid unfenced pause chip:\n%s", k8s)
	}
}
