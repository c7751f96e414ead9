package nemesis

import (
	"strings"
	"testing"
)

func TestRuleSpecs(t *testing.T) {
	cases := []struct {
		r    Rule
		want []string
	}{
		{Rule{Inbound: true, Peer: "198.19.4.3", Action: ActionDrop, FaultID: 7},
			[]string{"-s 198.19.4.3/32 ! -i lo -m comment --comment splitbrain-fault-7 -j DROP"}},
		{Rule{Inbound: false, Peer: "198.19.4.3", Action: ActionReject, FaultID: 2},
			[]string{"-p tcp -d 198.19.4.3/32 -m comment --comment splitbrain-fault-2 -j REJECT --reject-with tcp-reset",
				"-d 198.19.4.3/32 -m comment --comment splitbrain-fault-2 -j REJECT --reject-with icmp-port-unreachable"}},
		{Rule{Inbound: true, Peer: "198.19.4.3", Action: ActionReject, FaultID: 2},
			[]string{"-p tcp -s 198.19.4.3/32 ! -i lo -m comment --comment splitbrain-fault-2 -j REJECT --reject-with tcp-reset",
				"-s 198.19.4.3/32 ! -i lo -m comment --comment splitbrain-fault-2 -j REJECT --reject-with icmp-port-unreachable"}},
		{Rule{Inbound: true, Peer: "10.0.0.1", Prob: 0.25, FaultID: 3},
			[]string{"-s 10.0.0.1/32 ! -i lo -m statistic --mode random --probability 0.250000 -m comment --comment splitbrain-fault-3 -j DROP"}},
	}
	for _, c := range cases {
		specs, err := c.r.Specs()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range specs {
			got = append(got, strings.Join(s, " "))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%+v:\n got %q\nwant %q", c.r, got, c.want)
		}
	}
	for _, bad := range []Rule{{Peer: "etcd-1"}, {Peer: "::1"}, {Peer: "1.2.3.4", Action: "tarpit"}, {Peer: "1.2.3.4", Prob: 2}} {
		if _, err := bad.Specs(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestScripts(t *testing.T) {
	rules := []Rule{{Inbound: true, Peer: "198.19.4.3", FaultID: 1}, {Peer: "198.19.4.4", Action: ActionReject, FaultID: 1}}
	s, err := ApplyScript(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"iptables -w 5 -N SPLITBRAIN-IN 2>/dev/null || true",
		"iptables -w 5 -C INPUT -j SPLITBRAIN-IN 2>/dev/null || iptables -w 5 -I INPUT 1 -j SPLITBRAIN-IN",
		"iptables -w 5 -C OUTPUT -j SPLITBRAIN-OUT 2>/dev/null || iptables -w 5 -I OUTPUT 1 -j SPLITBRAIN-OUT",
		"iptables -w 5 -A SPLITBRAIN-IN -s 198.19.4.3/32 ! -i lo -m comment --comment splitbrain-fault-1 -j DROP",
		"iptables -w 5 -A SPLITBRAIN-OUT -p tcp -d 198.19.4.4/32 -m comment --comment splitbrain-fault-1 -j REJECT --reject-with tcp-reset",
		"iptables -w 5 -S",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("apply script lacks %q:\n%s", want, s)
		}
	}
	for _, script := range []string{s, HealScript()} {
		if strings.Contains(script, "-t nat") || strings.Contains(script, " -F\n") || strings.Contains(script, "-F INPUT") || strings.Contains(script, "-P ") {
			t.Errorf("script touches more than the project's chains:\n%s", script)
		}
	}
	r, _ := RemoveScript(rules)
	if !strings.Contains(r, "-D SPLITBRAIN-IN -s 198.19.4.3/32 ! -i lo -m comment --comment splitbrain-fault-1 -j DROP") || strings.Contains(r, "-X") {
		t.Errorf("remove script:\n%s", r)
	}
	h := HealScript()
	for _, want := range []string{"-D INPUT -j SPLITBRAIN-IN", "-F SPLITBRAIN-IN", "-X SPLITBRAIN-IN", "-D OUTPUT -j SPLITBRAIN-OUT", "-X SPLITBRAIN-OUT"} {
		if !strings.Contains(h, want) {
			t.Errorf("heal script lacks %q", want)
		}
	}
	if expectedRuleCount(rules) != 3 {
		t.Errorf("expected rule count %d", expectedRuleCount(rules))
	}
}

func TestListingChecks(t *testing.T) {
	listing := `-P INPUT ACCEPT
-P OUTPUT ACCEPT
-N SPLITBRAIN-IN
-A INPUT -j SPLITBRAIN-IN
-A SPLITBRAIN-IN -s 198.19.4.3/32 -m comment --comment "splitbrain-fault-1" -j DROP
-A SPLITBRAIN-IN -s 198.19.4.5/32 -m comment --comment splitbrain-fault-12 -j DROP
`
	if n := CountFaultRules(listing, 1); n != 1 {
		t.Errorf("fault 1: %d rules", n)
	}
	if n := CountFaultRules(listing, 12); n != 1 {
		t.Errorf("fault 12: %d rules", n)
	}
	if n := CountFaultRules(listing, 2); n != 0 {
		t.Errorf("fault 2: %d rules", n)
	}
	if !HasProjectRules(listing) || HasProjectRules("-P INPUT ACCEPT\n-P FORWARD ACCEPT\n") {
		t.Error("HasProjectRules wrong")
	}
}
