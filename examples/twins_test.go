package examples

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateTwins = flag.Bool("update-twins", false, "rewrite the broken twins from the correct examples")

// twin derives a deliberately broken example from the correct one: the marked block is cut
// (or replaced) and the header says what is broken. Deriving keeps the pair in step: the
// only difference is the bug.
type twin struct {
	correct, broken string
	block           string // BEGIN/END marker name
	replacement     string // what stands in for each marked block
	header          [2]string
}

var twins = []twin{
	{
		correct: "python/candidate.py", broken: "python/candidate_broken.py", block: "lease-check",
		replacement: "# (lease check cut: the DELIBERATELY BROKEN twin never notices it lost the lock)",
		header: [2]string{`"""A splitbrain candidate in Python: a Redis lease with a fencing token.`,
			`"""DELIBERATELY BROKEN twin of candidate.py: it never checks its lease (a zombie leader).` + "\n\n" +
				`It renews blindly and writes until SIGTERM or a 409: with an unfenced resource a paused leader's` + "\n" +
				`writes are accepted after the next leader's, and the run is invalid (stale-write-accepted).`},
	},
	{
		correct: "shell/candidate.sh", broken: "shell/candidate_broken.sh", block: "token",
		replacement: "token=$(etcd /v3/kv/range \"{\\\"key\\\":\\\"$key\\\"}\" | jq -r '.kvs[0].version') # BROKEN: the key's version, always 1",
		header: [2]string{`# A splitbrain candidate in POSIX shell: an etcd lease through etcd's JSON gateway, with curl`,
			`# DELIBERATELY BROKEN twin of candidate.sh: its token is the leader key's *version* (always 1)` + "\n" +
				`# instead of its create revision, so every leader has token 1 (duplicate-token: invalid).` + "\n" +
				`# The correct candidate.sh: a splitbrain candidate in POSIX shell: an etcd lease through etcd's JSON gateway, with curl`},
	},
}

func (tw twin) derive(src string) string {
	re := regexp.MustCompile(`(?m)^([ \t]*)# BEGIN ` + tw.block + `\n(?:.*\n)*?[ \t]*# END ` + tw.block + `\n`)
	out := re.ReplaceAllString(src, "${1}"+strings.ReplaceAll(tw.replacement, "$", "$$")+"\n")
	return strings.Replace(out, tw.header[0], tw.header[1], 1)
}

func TestBrokenTwinsDerivedFromCorrect(t *testing.T) {
	for _, tw := range twins {
		src, err := os.ReadFile(tw.correct)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "# BEGIN "+tw.block) || !strings.Contains(string(src), tw.header[0]) {
			t.Fatalf("%s lost its %q markers or header", tw.correct, tw.block)
		}
		want := tw.derive(string(src))
		if *updateTwins {
			if err := os.WriteFile(tw.broken, []byte(want), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(tw.broken)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is not %s with the %q block cut: run go test ./examples -run TestBrokenTwins -update-twins", tw.broken, tw.correct, tw.block)
		}
	}
}
