package lint

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// logSign is a line in a candidate's log that gives a known connection mistake away
// (docs/candidates.md section 8, "Connecting, store by store").
type logSign struct {
	store string   // "" = any store
	any   []string // substrings, any of which marks the mistake
	code  string
	rule  string
	what  string // %s = the node
	fix   string
}

var logSigns = []logSign{
	{store: "dynamodb", any: []string{"unsupported protocol scheme", "Failed to parse uri", "Invalid endpoint"},
		code: "endpoint-without-scheme", rule: "R12",
		what: "%s gave the DynamoDB client SPLITBRAIN_STORE_ENDPOINTS (host:port) where it wants a URL",
		fix:  `use "http://" + the endpoint as the client's endpoint URL (Go SDK v2: dynamodb.Options{BaseEndpoint: aws.String("http://" + ep)}; boto3: endpoint_url="http://" + ep); docs/candidates.md section 8, DynamoDB`},
	{store: "dynamodb", any: []string{"failed to retrieve credentials", "no EC2 IMDS role found", "NoCredentialProviders", "Unable to locate credentials", "MissingAuthenticationToken", "169.254.169.254"},
		code: "no-credentials", rule: "R12",
		what: "%s's DynamoDB client found no credentials (the harness sets no AWS_* variable and there is no metadata service)",
		fix:  `give the client a static key, any value works with dynalite (Go: Credentials: aws.CredentialsProviderFunc returning aws.Credentials{AccessKeyID: "any", SecretAccessKey: "any"}; boto3: aws_access_key_id="any", aws_secret_access_key="any"); docs/candidates.md section 8, DynamoDB`},
	{store: "dynamodb", any: []string{"You must specify a region", "Missing Region", "region is not set", "MissingRegion"},
		code: "no-region", rule: "R12",
		what: "%s's DynamoDB client has no region",
		fix:  `set any region, e.g. us-east-1 (dynalite does not check it, the SDK needs one to sign); docs/candidates.md section 8, DynamoDB`},
	{store: "consul", any: []string{"127.0.0.1:8500", "localhost:8500", "[::1]:8500"},
		code: "consul-default-address", rule: "R12",
		what: "%s talks to 127.0.0.1:8500, consul/api's default (a local agent); no Consul agent runs next to a candidate",
		fix:  `pass one of SPLITBRAIN_STORE_ENDPOINTS as the address (consul/api: api.Config{Address: ep, HttpClient: &http.Client{Timeout: ttl/2}}) and move to the next endpoint when a call fails; docs/candidates.md section 8, Consul`},
	{store: "kubernetes", any: []string{"unable to load in-cluster configuration", "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"},
		code: "in-cluster-config", rule: "R12",
		what: "%s asked for the in-cluster configuration; candidates get no service-account token, only a kubeconfig",
		fix:  `build the client from the file in SPLITBRAIN_STORE_KUBECONFIG (client-go: clientcmd.BuildConfigFromFlags("", path); Python: kubernetes.config.load_kube_config(config_file=path)); docs/candidates.md section 8, kubernetes`},
	{any: []string{"dial tcp 127.0.0.1:", "dial tcp [::1]:", "connect to localhost", "Connection refused (localhost"},
		code: "store-on-localhost", rule: "R12",
		what: "%s dials a store on localhost: its client was not given SPLITBRAIN_STORE_ENDPOINTS and uses a default address",
		fix:  `connect to the endpoints in SPLITBRAIN_STORE_ENDPOINTS (node names on the run network); docs/candidates.md section 8 says what each client needs`},
}

// unsetVars are the contract's variables that the harness does not set in every run of
// `candidate check`: why, for a store, and what to do instead. ok says whether it is set.
var unsetVars = map[string]func(store string) (set bool, instead string){
	"SPLITBRAIN_STORE_ENDPOINTS": func(s string) (bool, string) {
		return s != "none", "with store none there is no store: read SPLITBRAIN_PEERS and SPLITBRAIN_LISTEN_PORT"
	},
	"SPLITBRAIN_STORE_KUBECONFIG": func(s string) (bool, string) {
		return s == "kubernetes", "only the kubernetes store has a kubeconfig: require it only when SPLITBRAIN_STORE=kubernetes"
	},
	"SPLITBRAIN_POD_NAME": func(s string) (bool, string) {
		return s == "kubernetes", "only the kubernetes store has Pods: require it only when SPLITBRAIN_STORE=kubernetes"
	},
	"SPLITBRAIN_STORE_USER": func(s string) (bool, string) {
		return s == "kubernetes", "PostgreSQL's user is postgres by default: fall back to it when the variable is not set"
	},
	"SPLITBRAIN_STORE_PASSWORD": func(string) (bool, string) {
		return false, "the project's PostgreSQL trusts the run network: no password is set, treat it as optional"
	},
	"SPLITBRAIN_STORE_DATABASE": func(string) (bool, string) {
		return false, "the database is postgres by default: fall back to it when the variable is not set"
	},
	"SPLITBRAIN_RENEW_INTERVAL": func(string) (bool, string) {
		return false, "it is set only with --renew-interval: fall back to your own default (e.g. TTL/3)"
	},
	"SPLITBRAIN_RETRY_INTERVAL": func(string) (bool, string) {
		return false, "it is set only with --retry-interval: fall back to your own default (e.g. 50ms)"
	},
	"SPLITBRAIN_LEADER_WORK": func(string) (bool, string) {
		return false, "it is set only with --leader-work: treat it as optional"
	},
	"SPLITBRAIN_RECIPE": func(string) (bool, string) {
		return false, "it names a Go recipe and is set only with --recipe: an external candidate does not need it"
	},
}

// isCause: problems that explain others (a candidate that cannot reach its store or
// start is also never elected).
func isCause(code string) bool {
	if code == "requires-unset-variable" || code == "bad-environment" {
		return true
	}
	for _, s := range logSigns {
		if s.code == code {
			return true
		}
	}
	return false
}

var varName = regexp.MustCompile(`SPLITBRAIN_[A-Z_]+`)

// logs lints the candidates' own output (opts.Logs, node -> the text of logs/<node>.log) for
// the known connection mistakes, and explains an exit with code 64 (R15: bad environment).
func (l *linter) logs(opts Options, exit64 map[string]bool) {
	nodes := make([]string, 0, len(opts.Logs))
	for n := range opts.Logs {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		text := opts.Logs[node]
		specific := false
		for _, s := range logSigns {
			if s.store != "" && s.store != opts.Store || s.store == "" && specific {
				continue // the generic signs come last: one mistake, one problem
			}
			if line := firstLineWith(text, s.any); line != "" {
				l.add(s.code, s.rule, node, fmt.Sprintf(s.what, node), s.fix, printable(line))
				specific = specific || s.store != ""
			}
		}
		if !exit64[node] {
			continue
		}
		named := false
		for _, v := range uniq(varName.FindAllString(lastLines(text, 20), -1)) {
			isSet, instead := true, ""
			if f, ok := unsetVars[v]; ok {
				isSet, instead = f(opts.Store)
			}
			if isSet {
				continue
			}
			named = true
			l.add("requires-unset-variable", "R15", node,
				fmt.Sprintf("%s exited with code 64 naming %s, which the harness does not set with store %s", node, v, opts.Store),
				instead+"; docs/candidates.md section 1 lists the variables set for each store", printable(lineWith(text, v)))
		}
		if !named {
			l.add("bad-environment", "R15", node,
				fmt.Sprintf("%s exited with code 64 (its environment was unusable to it)", node),
				"require only the variables docs/candidates.md section 1 lists as set for store "+opts.Store+"; its log's last lines say what it missed",
				printable(lastLines(text, 3)))
		}
	}
}

// slowTakeovers reports handoffs after which nobody was elected for longer than bound: the
// waiting candidates' store calls or poll periods are longer than the TTL, the sign of a
// client library's defaults (R16). Times, not history order, decide: each candidate's
// lines arrive on a pipe of its own, so the successor's "elected" can be recorded before the
// resigning leader's "stepped-down" (and before the SIGTERM event itself).
func (l *linter) slowTakeovers(evs []history.Event, bound time.Duration) {
	type freed struct {
		node    string
		sig, at int64 // SIGTERM sent, stepped-down printed
	}
	var frees []freed
	var elected []int64
	sigAt := map[string]int64{}
	var last, teardown int64 // teardown's SIGTERMs end what can be expected of a waiter
	for _, e := range evs {
		last = max(last, e.T)
		switch {
		case e.Source == history.SourceHarness && e.Kind == history.KindSignal && e.Signal == "SIGTERM":
			if e.Reason == "handoff" {
				sigAt[e.Node] = e.T
			} else {
				delete(sigAt, e.Node)
			}
		case e.Source == history.SourceCandidate && e.Kind == history.KindSteppedDown:
			if sig, ok := sigAt[e.Node]; ok {
				frees = append(frees, freed{e.Node, sig, e.T})
				delete(sigAt, e.Node)
			}
		case e.Source == history.SourceCandidate && e.Kind == history.KindElected:
			elected = append(elected, e.T)
		case e.Kind == history.KindPhase && e.Phase == "teardown" && teardown == 0:
			teardown = e.T
		}
	}
	end := last
	if teardown > 0 {
		end = teardown
	}
	sort.Slice(elected, func(i, j int) bool { return elected[i] < elected[j] })
	for _, f := range frees {
		next := end
		if i := sort.Search(len(elected), func(i int) bool { return elected[i] >= f.sig }); i < len(elected) && elected[i] < end {
			next = elected[i]
		}
		if took := time.Duration(next - f.at); took > bound {
			l.slow(f.node, took, bound)
		}
	}
}

func (l *linter) slow(node string, took, bound time.Duration) {
	l.add("slow-takeover", "R16", "",
		fmt.Sprintf("after %s resigned on SIGTERM, no candidate was elected for %v (more than %v): the waiting candidates do not see the free lock in time",
			node, took.Round(10*time.Millisecond), bound),
		"poll every SPLITBRAIN_RETRY_INTERVAL or watch, and bound every store call below the TTL; client defaults that cause this: consul/api Lock (15 s session, 5 s retry after a lock-delay), client-go leader election (15 s/10 s/2 s), etcd concurrency sessions (60 s), redsync (8 s expiry); docs/candidates.md section 8", "")
}

func firstLineWith(text string, subs []string) string {
	for _, line := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				return line
			}
		}
	}
	return ""
}

func lineWith(text, sub string) string { return firstLineWith(text, []string{sub}) }

func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// printable keeps a quoted log line from steering the terminal: control characters other
// than newline and tab become \xNN.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u202d':
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cutLeaders reports a leader that was cut off by a partition fault and still believed it
// led bound after the cut began: its store calls or its lease check outlast the TTL, the
// sign of a client library's default timeouts (R14, R16). Only faults that lasted at least
// bound count.
func (l *linter) cutLeaders(evs []history.Event, bound time.Duration) {
	leading := map[string]bool{}
	cutAt := map[string]int64{} // a leader cut off at, still believing
	for _, e := range evs {
		for node, at := range cutAt {
			if e.T-at > int64(bound) {
				l.add("leader-outlives-cut", "R16", node,
					fmt.Sprintf("%s was cut off from its store while it led and still believed it led %v later (more than %v)", node, bound, bound),
					"bound every store call below the TTL (R16) and check a local deadline, counted from the send time of the last granted renewal, before every write (R14); client defaults that hide a lost lease: consul/api's HTTP client without timeout and 15 s Lock wait, go-redis's 5 s reads with 3 retries, client-go's rest.Config without timeout, the AWS SDK's 3 attempts with backoff; docs/candidates.md section 8", "")
				delete(cutAt, node)
			}
		}
		switch {
		case e.Source == history.SourceCandidate && e.Kind == history.KindElected:
			leading[e.Node] = true
		case e.Source == history.SourceCandidate && e.Kind == history.KindSteppedDown,
			e.Kind == history.KindProcessExit:
			leading[e.Node] = false
			delete(cutAt, e.Node)
		case e.Kind == history.KindFaultStart && e.Fault == "partition":
			for _, n := range e.Targets {
				if leading[n] {
					cutAt[n] = e.T
				}
			}
		case e.Kind == history.KindFaultEnd:
			for _, n := range e.Targets {
				delete(cutAt, n) // healed before the bound: nothing to say
			}
		}
	}
}
