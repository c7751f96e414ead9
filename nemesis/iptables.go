package nemesis

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The project's own chains, hooked from INPUT and OUTPUT of the filter table in the target's
// network namespace. Nothing else is touched: Docker keeps its DNS rules in the nat table of
// the same namespace, and flushing those would break name resolution.
const (
	ChainIn  = "SPLITBRAIN-IN"
	ChainOut = "SPLITBRAIN-OUT"
)

// Actions for cut packets.
const (
	ActionDrop   = "drop"   // silent: connections hang until their own timeouts
	ActionReject = "reject" // TCP reset / ICMP unreachable: peers fail fast
)

// Rule is one cut or lossy link enforced in one namespace.
type Rule struct {
	Inbound bool    // INPUT side (match source) or OUTPUT side (match destination)
	Peer    string  // the other side's IPv4 address
	Action  string  // ActionDrop or ActionReject
	Prob    float64 // 0 (or 1): every packet; else drop with this probability (loss)
	FaultID int     // tags the rule so one fault can be removed without touching another
	// Bridge: a stand-in on the far side of an edge while the node that holds the edge's
	// rule restarts (netcuts.go); tagged apart, so the fault's own rules are counted and
	// removed without it.
	Bridge bool
}

// faultComment tags a rule with its fault; heal and verification look for it.
func faultComment(id int) string { return "splitbrain-fault-" + strconv.Itoa(id) }

// comment is the rule's tag.
func (r Rule) comment() string {
	if r.Bridge {
		return faultComment(r.FaultID) + "-bridge"
	}
	return faultComment(r.FaultID)
}

func (r Rule) chain() string {
	if r.Inbound {
		return ChainIn
	}
	return ChainOut
}

// Specs returns the iptables rule specifications (without -A/-D CHAIN) for r. REJECT
// needs two: TCP gets a reset, everything else an ICMP port unreachable.
func (r Rule) Specs() ([][]string, error) {
	addr, err := netip.ParseAddr(r.Peer)
	if err != nil || !addr.Is4() {
		return nil, fmt.Errorf("iptables rule: peer %q is not an IPv4 address", r.Peer)
	}
	// Inbound rules skip loopback: a reset that an OUTPUT REJECT generates for a local
	// socket arrives through lo with the peer's source address, and dropping it would turn
	// a fast "connection refused" into a hang (measured).
	match := []string{"-s", addr.String() + "/32", "!", "-i", "lo"}
	if !r.Inbound {
		match = []string{"-d", addr.String() + "/32"}
	}
	if r.Prob < 0 || r.Prob > 1 {
		return nil, fmt.Errorf("iptables rule: probability %v outside 0..1", r.Prob)
	}
	if r.Prob > 0 && r.Prob < 1 {
		match = append(match, "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(r.Prob, 'f', 6, 64))
	}
	match = append(match, "-m", "comment", "--comment", r.comment())
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	switch r.Action {
	case ActionDrop, "":
		return [][]string{join(match, []string{"-j", "DROP"})}, nil
	case ActionReject:
		return [][]string{
			join([]string{"-p", "tcp"}, match, []string{"-j", "REJECT", "--reject-with", "tcp-reset"}),
			join(match, []string{"-j", "REJECT", "--reject-with", "icmp-port-unreachable"}),
		}, nil
	}
	return nil, fmt.Errorf("iptables rule: action %q: want %s or %s", r.Action, ActionDrop, ActionReject)
}

// ipt is the iptables invocation every script uses: wait for the xtables lock instead of
// failing when another rule change is in flight.
const ipt = "iptables -w 5"

// ApplyScript creates the chains and their hooks if needed, appends the rules, and lists
// the chains so the caller can verify them. It runs under sh -c in the tools sidecar.
func ApplyScript(rules []Rule) (string, error) {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, hook := range [][2]string{{"INPUT", ChainIn}, {"OUTPUT", ChainOut}} {
		fmt.Fprintf(&b, "%s -N %s 2>/dev/null || true\n", ipt, hook[1])
		fmt.Fprintf(&b, "%s -C %s -j %s 2>/dev/null || %s -I %s 1 -j %s\n", ipt, hook[0], hook[1], ipt, hook[0], hook[1])
	}
	for _, r := range rules {
		specs, err := r.Specs()
		if err != nil {
			return "", err
		}
		for _, s := range specs {
			fmt.Fprintf(&b, "%s -A %s %s\n", ipt, r.chain(), strings.Join(s, " "))
		}
	}
	fmt.Fprintf(&b, "%s -S\n", ipt)
	return b.String(), nil
}

// RemoveScript deletes one fault's rules (a rule already gone, e.g. because the node was
// restarted into a fresh namespace, is fine) and lists what is left for verification.
func RemoveScript(rules []Rule) (string, error) {
	var b strings.Builder
	for _, r := range rules {
		specs, err := r.Specs()
		if err != nil {
			return "", err
		}
		for _, s := range specs {
			fmt.Fprintf(&b, "while %s -D %s %s 2>/dev/null; do :; done\n", ipt, r.chain(), strings.Join(s, " "))
		}
	}
	fmt.Fprintf(&b, "%s -S\n", ipt)
	return b.String(), nil
}

// HealScript removes the project's chains and hooks entirely and lists the filter table.
func HealScript() string {
	var b strings.Builder
	for _, hook := range [][2]string{{"INPUT", ChainIn}, {"OUTPUT", ChainOut}} {
		fmt.Fprintf(&b, "while %s -D %s -j %s 2>/dev/null; do :; done\n", ipt, hook[0], hook[1])
		fmt.Fprintf(&b, "%s -F %s 2>/dev/null || true\n", ipt, hook[1])
		fmt.Fprintf(&b, "%s -X %s 2>/dev/null || true\n", ipt, hook[1])
	}
	fmt.Fprintf(&b, "%s -S\n", ipt)
	return b.String()
}

// CountFaultRules counts the rules of a fault in an `iptables -S` listing.
func CountFaultRules(listing string, faultID int) int {
	return countTagged(listing, faultComment(faultID))
}

// countTagged counts the rules tagged exactly tag in a listing.
func countTagged(listing, tag string) int {
	n := 0
	for _, line := range strings.Split(listing, "\n") {
		if !strings.HasPrefix(line, "-A ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if strings.Trim(f, `"`) == tag {
				n++
				break
			}
		}
	}
	return n
}

// HasProjectRules reports whether a listing still shows any of the project's chains.
func HasProjectRules(listing string) bool {
	return strings.Contains(listing, ChainIn) || strings.Contains(listing, ChainOut) || strings.Contains(listing, "splitbrain-fault-")
}

// expectedRuleCount is how many listing lines rules produce.
func expectedRuleCount(rules []Rule) int {
	n := 0
	for _, r := range rules {
		if r.Action == ActionReject {
			n += 2
		} else {
			n++
		}
	}
	return n
}
