// Command splitbrain is a chaos harness for leader-election recipes: it runs real store
// clusters and candidates in containers, injects faults, and checks that no stale write is
// ever accepted. Each subcommand lives in its own cmd_<name>.go file and registers itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/splitbrain-chaos/splitbrain/internal/progress"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Exit codes: the verdict of a run or check, or a harness failure.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitUsage   = 64
	exitHarness = 255
)

type command struct {
	name    string
	summary string
	// run returns the process exit code; an error is printed and turns into exitHarness
	// unless it is a usageError.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// usageError marks bad flags or arguments: exit code 64 and a pointer to --help.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	// A reader that goes away (`splitbrain matrix | head`) must stop the runs as Ctrl-C
	// does, healing and removing what they started, not kill the process mid-fault: with
	// SIGPIPE ignored a write to the closed pipe returns EPIPE, and closedOutput interrupts.
	signal.Ignore(syscall.SIGPIPE)
	stopProfile, err := startCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitbrain:", err)
		os.Exit(2)
	}
	code := runMain(os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	os.Exit(code)
}

// errOutputClosed is the interrupt's cause when stdout or stderr is a pipe nobody reads.
var errOutputClosed = errors.New("the output's reader went away (broken pipe)")

// closedOutput interrupts the command (cancel) at the first write that finds its pipe closed.
type closedOutput struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

// watchClosed wraps w unless it is a terminal, which does not break like a pipe and whose
// *os.File the progress printer needs to see to redraw its line.
func watchClosed(w io.Writer, cancel context.CancelCauseFunc) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return w
	}
	return closedOutput{w, cancel}
}

func (c closedOutput) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		c.cancel(errOutputClosed)
	}
	return n, err
}

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printHelp(stdout)
		return exitValid
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "splitbrain: unknown command %q; known: %s (see splitbrain --help)\n",
			args[0], strings.Join(commandNames(), ", "))
		return exitUsage
	}
	// The first SIGINT/SIGTERM cancels ctx so the run heals and tears down; a second one
	// falls through to the default action.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, closed := context.WithCancelCause(ctx)
	defer closed(nil)
	go func() {
		<-ctx.Done()
		stop()
	}()
	stdout, stderr = watchClosed(stdout, closed), watchClosed(stderr, closed)
	code, err := c.run(ctx, args[1:], stdout, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "splitbrain %s: %s\n(run 'splitbrain %s --help' for the valid flags)\n", c.name, errorText(err), c.name)
			return exitUsage
		}
		fmt.Fprintf(stderr, "splitbrain %s: %s\n", c.name, errorText(err))
		if code == exitValid {
			code = exitHarness
		}
	}
	return code
}

// maxErrorText caps an error message: errors quote their input, and a 120 KB garbage
// --nemesis once produced 240 KB of stderr.
const maxErrorText = 4096

// errorText is err's message, capped and with control characters escaped.
func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s… [%d more bytes of this message cut]", s[:cut], len(s)-cut)
	}
	return progress.Printable(s)
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, wrap("splitbrain: chaos tests for leader-election recipes on real "+storekinds.Titles()+
		" servers, or with no store at all (candidates elect among themselves), with fencing-token, split-brain and failover checks.", 80))
	fmt.Fprint(w, `

Usage: splitbrain <command> [flags]   (splitbrain <command> --help for its flags)

Commands:
`)
	width := 0
	for _, n := range commandNames() {
		width = max(width, len(n))
	}
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprint(w, `
Exit codes: 0 valid, 1 invalid, 2 unknown, 64 bad usage, 255 harness error.
Docs: README.md and docs/ in the source tree.
`)
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// newFlags makes a FlagSet whose errors come back as usage errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("splitbrain "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlagsAll parses args like parseFlags but does not stop at the first bad flag: it
// skips it, goes on, and returns every problem at once (flag errors, then stray arguments).
func parseFlagsAll(fs *flag.FlagSet, args []string) []string {
	var problems []string
	usage, output := fs.Usage, fs.Output()
	fs.Usage = func() {} // one list and one usage hint at the end, not a line per bad flag
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(output) }()
	for {
		err := fs.Parse(args)
		if err == nil {
			break
		}
		if errors.Is(err, flag.ErrHelp) {
			return []string{flag.ErrHelp.Error()}
		}
		problems = append(problems, err.Error())
		args = fs.Args() // what follows the bad flag
	}
	for _, a := range fs.Args() {
		problems = append(problems, fmt.Sprintf("unexpected argument %q", a))
	}
	return problems
}

// parseFlags parses args and rejects leftover positional arguments unless allowed.
func parseFlags(fs *flag.FlagSet, args []string, allowArgs bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if !allowArgs && fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
