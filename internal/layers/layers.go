// Package layers states the project's layer rule: packages are stacked along the data path,
// and a package may import only packages of its own layer or below. TestImportsPointDown
// checks every package of the module against this table; a new package gets a row here.
package layers

import "slices"

// Layers lists the module's packages bottom-up, relative to the module path.
var Layers = [][]string{
	// 0 kernel: the event schema every stage reads and writes, the one reader of run
	// directory files and user-named inputs and the one writer of output files, and the
	// facts of the store kinds and fault kinds (plain data, no imports beyond the standard
	// library).
	{"history", "history/runfile", "internal/storekinds", "internal/faultkinds",
		// the wall-clock bound rule of the chaos tests (a test helper: the standard library only)
		"internal/boundtest",
		// the data of an assessment's outcome, for readers that must not link assess
		// (splitbraintest): the standard library only
		"assess/scorecard",
		// the line protocol of splitbraintest and `splitbrain assess --driven`
		"assess/assessproto"},
	// 1 platform: the Docker engine, the images, the TCP fault proxy and the fence device.
	{"internal/platform", "internal/images", "internal/faultproxy", "internal/fence",
		// the base image's tree and name (the standard library only: cmd/splitbrain-rootfs)
		"internal/images/rootfs"},
	// 2 stages that produce the history: store clusters, candidates, workloads, faults.
	{"internal/stores", "internal/platform/platformtest",
		"candidates/contract", "candidates/runtime", "candidates/libraries", "candidates",
		"workloads", "workloads/resource", "nemesis"},
	// 3 checkers: pure functions of a history.
	{"checkers", "checkers/lint"},
	// 4 presentation: what a run's directory holds and how it is shown.
	{"reports/runconfig", "internal/progress", "reports"},
	// 5 the run lifecycle.
	{"harness"},
	// 6 what drives many runs: the known-answer matrix, replay, shrink and explore.
	{"suite", "shrink", "explore"},
	// 7 assess: a battery of suite rows and an explore search for one candidate.
	{"assess"},
	// 8 the command line, and the example candidates (programs that import nothing of the
	// module: they show the contract from outside), and the tests of the shell scripts.
	{"cmd/splitbrain", "cmd/splitbrain-rootfs", "cmd/splitbrain-testtimes", "examples", "examples/go", "scripts",
		"examples/internal/candidate", "examples/stores/consul", "examples/stores/dynamodb",
		"examples/stores/kubernetes", "examples/stores/none", "examples/stores/redis-multi",
		// the published election bugs (issue 36), buggy and fixed from one source
		"examples/bugs/internal/zkelect", "examples/bugs/zk-suspended",
		"examples/bugs/zk-predecessor", "examples/bugs/redis-del-unowned",
		"examples/bugs/pg-advisory-unchecked", "examples/bugs/dynamodb-wallclock",
		"examples/bugs/etcd-session-done", "examples/bugs/etcd-lock-unfenced",
		"examples/bugs/redlock-restart"},
	// 9 the Go API for a user's own go test (examples/gotest-user, a module of its own, uses it).
	{"splitbraintest"},
}

// Light are packages that must not link a store client library (Kubernetes, AWS, Consul):
// they read facts only, so a report render or a nemesis unit test does not compile client-go
// (TestLightPackagesStayLight).
var Light = []string{"history", "internal/storekinds", "internal/faultkinds", "checkers", "reports", "nemesis", "assess/scorecard"}

// Leaves import only the standard library: they are the facts everything else reads.
var Leaves = []string{"internal/storekinds", "internal/faultkinds", "assess/scorecard", "internal/images/rootfs"}

// Heavy are the import path prefixes of the store client libraries Light packages must not
// depend on, even indirectly.
var Heavy = []string{"k8s.io/", "sigs.k8s.io/", "github.com/aws/", "github.com/hashicorp/consul"}

// Layer returns the layer of a package path (relative to the module), or -1.
func Layer(pkg string) int {
	for i, layer := range Layers {
		for _, p := range layer {
			if p == pkg {
				return i
			}
		}
	}
	return -1
}

// UserAPI are the packages a user's own go test imports (splitbraintest, and the scorecard
// types Assess returns): they link no store client library at all, and few packages, so a
// user's first go test compiles in seconds (TestUserAPIStaysLight; the checks run in the
// splitbrain binary, which links the clients).
var UserAPI = []string{"splitbraintest", "assess/scorecard"}

// UserAPIMaxDeps bounds `go list -deps -test` of each UserAPI package (its tests' own
// packages aside): 85 for splitbraintest itself and 127 with its tests when it was set
// (docs/performance.md "The user's go test"), against 1,151 before; the headroom is for the
// standard library's growth, not for a client library.
const UserAPIMaxDeps = 140

// StoreClients are the import path prefixes of every store's client library (and its
// Kubernetes and AWS kin): none may reach a UserAPI package, even indirectly.
var StoreClients = append(slices.Clone(Heavy), "go.etcd.io/etcd/client", "github.com/go-zookeeper",
	"github.com/redis", "github.com/jackc", "github.com/go-redsync", "github.com/hashicorp/",
	"github.com/testcontainers", "github.com/moby", "github.com/docker")
