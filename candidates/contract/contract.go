// Package contract holds the names of the candidate contract (docs/candidates.md): the
// environment a candidate process gets and the events it prints. The harness that starts
// candidates and the Go runtime that implements the contract both use these names.
package contract

// Version of the candidate contract.
const Version = 1

// Environment variables the harness sets for every candidate.
const (
	EnvNodeID         = "SPLITBRAIN_NODE_ID"           // e.g. "c1"; unique within the run
	EnvStore          = "SPLITBRAIN_STORE"             // etcd | zookeeper | postgres | redis
	EnvStoreEndpoints = "SPLITBRAIN_STORE_ENDPOINTS"   // comma-separated host:port list, reachable from the candidate
	EnvResourceURL    = "SPLITBRAIN_RESOURCE_URL"      // base URL of the fenced resource, e.g. http://resource:8080
	EnvLeaseTTL       = "SPLITBRAIN_LEASE_TTL"         // lease/session length, Go duration ("2s")
	EnvWriteInterval  = "SPLITBRAIN_WRITE_INTERVAL"    // leader write interval, Go duration ("50ms")
	EnvClockFile      = "SPLITBRAIN_CLOCK_OFFSET_FILE" // file holding the clock offset in ns (signed integer)
	EnvElectionName   = "SPLITBRAIN_ELECTION"          // election/lock name to use (key prefix, znode path, lock id)
	EnvRecipe         = "SPLITBRAIN_RECIPE"            // recipe name, for Go recipes
	EnvContract       = "SPLITBRAIN_CONTRACT"          // contract version the harness speaks
)

// ClockFilePath is where the harness places the clock-offset control in candidate containers.
const ClockFilePath = "/splitbrain/clock-offset"
