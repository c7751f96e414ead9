package nemesis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// specForm is shown with every spec error so the user sees the valid form.
const specForm = `valid form: KIND:key=value,key=value (e.g. pause:target=leader,every=10s,for=6s); several faults joined by ';' or '+'; a profile name; or @FILE with one fault per line`

// Schedule is a parsed nemesis spec: zero or more faults that run concurrently, each on its
// own timetable.
type Schedule struct {
	Faults []FaultSpec
}

// FaultSpec is one fault of a schedule as written (TTL multiples not yet resolved).
type FaultSpec struct {
	Kind   string
	Target string // "" means the kind's default
	Every  Dur    // repeat period, start to start; zero = once
	For    Dur    // how long each occurrence stays
	At     Dur    // first start offset; unset = seeded random
	Jitter Dur    // ± on every repeat; unset = 10% of Every
	Count  int    // at most this many occurrences; 0 = as many as fit
	// On, when set, starts each occurrence on an event instead of at a planned time; After
	// delays it from the event. Every is then the cooldown between firing events.
	On     Trigger
	After  Dur
	Params map[string]string
}

// Dur is a duration as written: either absolute ("6s") or a multiple of the lease TTL
// ("3xTTL"), resolved when the run's TTL is known. Signed values are allowed only where
// the key says so (clock delta).
type Dur struct {
	Set  bool
	D    time.Duration
	TTLs float64 // when non-zero the value is TTLs × TTL
	Text string  // as written, for canonical output
}

// Resolve returns the concrete duration for a run with the given TTL.
func (d Dur) Resolve(ttl time.Duration) time.Duration {
	if d.TTLs != 0 {
		// Saturate: a float beyond int64 converts to MinInt64 on amd64.
		v := d.TTLs * float64(ttl)
		switch {
		case v >= math.MaxInt64:
			return math.MaxInt64
		case v <= math.MinInt64:
			return math.MinInt64
		}
		return time.Duration(v)
	}
	return d.D
}

func (d Dur) String() string { return d.Text }

// negative reports whether the written value is below zero.
func (d Dur) negative() bool { return d.D < 0 || d.TTLs < 0 }

// ParseDur parses "6s", "1m30s", "3xTTL", "1.5xttl", "TTL", optionally signed.
func ParseDur(s string) (Dur, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Dur{}, fmt.Errorf("empty duration: use a Go duration like 6s or 500ms, or a TTL multiple like 3xTTL")
	}
	low := strings.ToLower(t)
	if strings.HasSuffix(low, "ttl") {
		num := strings.TrimSuffix(strings.TrimSuffix(low, "ttl"), "x")
		sign := 1.0
		if strings.HasPrefix(num, "+") {
			num = num[1:]
		} else if strings.HasPrefix(num, "-") {
			num, sign = num[1:], -1
		}
		f := 1.0
		if num != "" {
			v, err := strconv.ParseFloat(num, 64)
			// !(v > 0) also refuses NaN; hex floats ("0x1p-2") are not a way to write N.
			if err != nil || !(v > 0) || math.IsInf(v, 0) || v > MaxTTLMultiple || strings.ContainsAny(num, "xXpP_") {
				return Dur{}, fmt.Errorf("bad TTL multiple %q: write NxTTL with N a decimal number, 0 < N <= %d, e.g. 3xTTL or 1.5xTTL", s, MaxTTLMultiple)
			}
			f = v
		}
		return Dur{Set: true, TTLs: sign * f, Text: t}, nil
	}
	v, err := time.ParseDuration(t)
	if err != nil {
		return Dur{}, fmt.Errorf("bad duration %q: use a Go duration like 6s, 500ms, 1m30s, or a TTL multiple like 3xTTL", s)
	}
	d := Dur{Set: true, D: v, Text: t}
	if err := checkDurRange(d, s); err != nil {
		return Dur{}, fmt.Errorf("bad duration %q: %w; use at most %s", s, err, MaxDuration)
	}
	return d, nil
}

func mustDur(s string) Dur {
	d, err := ParseDur(s)
	if err != nil {
		panic(err)
	}
	return d
}

// commonKeys apply to every kind; kinds add their own (kindDef.keys).
var commonKeys = []keyDoc{
	{"target", "who is hit: " + strings.Join(targetNames(), ", ") + ", or node:NAME", ""},
	{"for", "how long each occurrence lasts (Go duration or NxTTL)", ""},
	{"every", "repeat period, start to start (default: once)", ""},
	{"at", "offset of the first start in the fault phase (default: seeded random)", ""},
	{"jitter", "± seeded random shift of each repeat (default 10% of every)", ""},
	{"count", "at most this many occurrences (default: as many as fit)", ""},
	{"on", "start on an event instead of a time: elected, campaigning, write[:N], stepped-down, fault-start, fault-end, step:NAME (docs/faults.md, Triggers)", ""},
	{"after", "with on=: delay from the event to the fault's start (>= 0; default 0)", ""},
}

type keyDoc struct {
	Key, Doc, Default string
}

// Parse reads a nemesis spec: faults separated by ';', '+' or newlines, profile names, or
// @FILE. "none" and "" give an empty schedule.
func Parse(spec string) (Schedule, error) {
	s, err := parse(spec, true)
	if err != nil {
		return Schedule{}, err
	}
	if err := s.checkProxyMix(); err != nil {
		return Schedule{}, err
	}
	if err := s.checkTriggers(); err != nil {
		return Schedule{}, err
	}
	return s, nil
}

// checkProxyMix refuses a proxy fault together with an iptables fault: with the proxy in
// the path the candidates' store traffic goes to the proxy's address, so rules between
// candidates and store nodes would no longer cut it.
func (s Schedule) checkProxyMix() error {
	var proxy, network []string
	for _, f := range s.Faults {
		d := kinds[f.Kind].def()
		if d.Proxy {
			proxy = append(proxy, f.String())
		}
		if d.Network {
			network = append(network, f.String())
		}
	}
	if len(proxy) > 0 && len(network) > 0 {
		return fmt.Errorf("%q routes the candidates' store connections through the fault proxy, so the iptables rules of %q would miss that traffic: run them in separate runs", proxy[0], network[0])
	}
	return nil
}

func parse(spec string, allowFile bool) (Schedule, error) {
	var s Schedule
	for _, item := range splitItems(spec) {
		switch {
		case strings.HasPrefix(item, "@"):
			if !allowFile {
				return Schedule{}, fmt.Errorf("%q: a schedule file cannot include another file; %s", item, specForm)
			}
			path := strings.TrimPrefix(item, "@")
			b, err := readSpecFile(path)
			if err != nil {
				return Schedule{}, fmt.Errorf("read nemesis schedule file: %w (%s)", err, specForm)
			}
			sub, err := parse(stripComments(string(b)), false)
			if err != nil {
				return Schedule{}, fmt.Errorf("%s: %w", path, err)
			}
			s.Faults = append(s.Faults, sub.Faults...)
		case isProfile(item):
			sub, err := parse(profiles[item].Spec, false)
			if err != nil {
				return Schedule{}, fmt.Errorf("profile %s: %w", item, err) // a bug in profiles.go
			}
			s.Faults = append(s.Faults, sub.Faults...)
		default:
			f, err := parseFault(item)
			if err != nil {
				return Schedule{}, err
			}
			s.Faults = append(s.Faults, f)
		}
	}
	return s, nil
}

func stripComments(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// splitItems splits on ';' and newlines, and on '+' when a name follows (so "delta=+5s"
// keeps its sign).
func splitItems(spec string) []string {
	var items []string
	start := 0
	flush := func(end int) {
		if it := strings.TrimSpace(spec[start:end]); it != "" {
			items = append(items, it)
		}
	}
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		split := c == ';' || c == '\n'
		if c == '+' {
			j := i + 1
			for j < len(spec) && spec[j] == ' ' {
				j++
			}
			split = j < len(spec) && (unicode.IsLetter(rune(spec[j])) || spec[j] == '@')
		}
		if split {
			flush(i)
			start = i + 1
		}
	}
	flush(len(spec))
	return items
}

func parseFault(item string) (FaultSpec, error) {
	name, rest, _ := strings.Cut(item, ":")
	name = strings.ToLower(strings.TrimSpace(name))
	if why, ok := unsupportedKinds[name]; ok {
		return FaultSpec{}, fmt.Errorf("fault kind %q is not supported here: %s", name, why)
	}
	k, ok := kinds[name]
	if !ok {
		return FaultSpec{}, fmt.Errorf("unknown fault kind or profile %s in %s: kinds are %s; profiles are %s; %s",
			shortQuote(name), shortQuote(item), strings.Join(KindNames(), ", "), strings.Join(ProfileNames(), ", "), specForm)
	}
	d := k.def()
	f := FaultSpec{Kind: name, Params: map[string]string{}}
	seen := map[string]bool{}
	rest = strings.TrimSpace(rest)
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			key, val, ok := strings.Cut(kv, "=")
			key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
			if !ok || key == "" || val == "" {
				return FaultSpec{}, fmt.Errorf("%q: %q is not key=value; keys for %s: %s; %s", item, kv, name, strings.Join(d.keyNames(), ", "), specForm)
			}
			if seen[key] {
				return FaultSpec{}, fmt.Errorf("%q: key %q given twice", item, key)
			}
			seen[key] = true
			if err := f.set(d, key, val); err != nil {
				return FaultSpec{}, fmt.Errorf("%q: %w", item, err)
			}
		}
	}
	if err := f.checkTrigger(); err != nil {
		return FaultSpec{}, fmt.Errorf("%q: %w", item, err)
	}
	if f.Every.Set && f.For.Set && f.Every.TTLs == 0 && f.For.TTLs == 0 && f.Every.D <= f.For.D {
		return FaultSpec{}, fmt.Errorf("%q: every=%s must be longer than for=%s (occurrences of one fault never overlap)", item, f.Every, f.For)
	}
	if f.Every.Set && f.For.Set && f.Every.TTLs != 0 && f.For.TTLs != 0 && f.Every.TTLs <= f.For.TTLs {
		return FaultSpec{}, fmt.Errorf("%q: every=%s must be longer than for=%s (occurrences of one fault never overlap)", item, f.Every, f.For)
	}
	if v, ok := k.impl().(specValidator); ok {
		if err := v.validate(&f); err != nil {
			return FaultSpec{}, fmt.Errorf("%q: %w", item, err)
		}
	}
	return f, nil
}

func (f *FaultSpec) set(k kindDef, key, val string) error {
	dur := func() (Dur, error) {
		d, err := ParseDur(val)
		if err != nil {
			return d, fmt.Errorf("%s: %w", key, err)
		}
		if d.negative() {
			return d, fmt.Errorf("%s=%s is negative: durations must be >= 0", key, val)
		}
		return d, nil
	}
	var err error
	switch key {
	case "target":
		if val != TargetTrigger { // checked with on= once every key is read
			if err := validTarget(val, k); err != nil {
				return err
			}
		}
		f.Target = val
	case "on":
		f.On, err = ParseTrigger(val)
	case "after":
		f.After, err = ParseDur(val)
		if err == nil && f.After.negative() {
			err = fmt.Errorf("after=%s is negative: a fault cannot start before its event; %s", val, triggerForm)
		} else if err != nil {
			err = fmt.Errorf("after: %w; %s", err, triggerForm)
		}
	case "for":
		f.For, err = dur()
		if err == nil && f.For.Resolve(time.Second) == 0 {
			err = fmt.Errorf("for=%s: a fault must last longer than 0", val)
		}
	case "every":
		f.Every, err = dur()
		if err == nil && f.Every.Resolve(time.Second) == 0 {
			err = fmt.Errorf("every=%s: the period must be longer than 0 (leave every out for a single occurrence)", val)
		}
	case "at":
		f.At, err = dur()
	case "jitter":
		f.Jitter, err = dur()
	case "count":
		n, cerr := strconv.Atoi(val)
		if cerr != nil || n < 1 {
			return fmt.Errorf("count=%s: want a whole number >= 1", val)
		}
		f.Count = n
	default:
		p, ok := k.param(key)
		if !ok {
			return fmt.Errorf("unknown key %q for %s: valid keys are %s; %s", key, k.Name, strings.Join(k.keyNames(), ", "), specForm)
		}
		if p.check != nil {
			if err := p.check(val); err != nil {
				return fmt.Errorf("%s=%s: %w", key, val, err)
			}
		}
		f.Params[key] = val
	}
	return err
}

// String is the canonical form: kind:key=value with keys in a fixed order.
func (f FaultSpec) String() string {
	var kv []string
	if f.Target != "" {
		kv = append(kv, "target="+f.Target)
	}
	if f.On.IsSet() {
		kv = append(kv, "on="+f.On.String())
	}
	if f.After.Set {
		kv = append(kv, "after="+f.After.Text)
	}
	keys := make([]string, 0, len(f.Params))
	for k := range f.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, k+"="+f.Params[k])
	}
	for _, d := range []struct {
		k string
		v Dur
	}{{"for", f.For}, {"every", f.Every}, {"at", f.At}, {"jitter", f.Jitter}} {
		if d.v.Set {
			kv = append(kv, d.k+"="+d.v.Text)
		}
	}
	if f.Count > 0 {
		kv = append(kv, "count="+strconv.Itoa(f.Count))
	}
	if len(kv) == 0 {
		return f.Kind
	}
	return f.Kind + ":" + strings.Join(kv, ",")
}

// String is the canonical schedule: faults joined by "; " ("none" when empty).
func (s Schedule) String() string {
	if len(s.Faults) == 0 {
		return "none"
	}
	parts := make([]string, len(s.Faults))
	for i, f := range s.Faults {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// Empty reports whether the schedule injects nothing.
func (s Schedule) Empty() bool { return len(s.Faults) == 0 }

// Needs derives the schedule's requirements from its kinds' traits.
func (s Schedule) Needs() Needs {
	var n Needs
	for _, f := range s.Faults {
		d := kinds[f.Kind].def()
		n.Network = n.Network || d.Network
		n.StoreProxy = n.StoreProxy || d.Proxy
		if d.Clock {
			target := f.Target
			if target == "" {
				target = d.DefaultTarget
			}
			if f.On.candidate() && (target == TargetTrigger || target == TargetLeader) {
				continue // the candidate whose event fired
			}
			n.StoreClock = n.StoreClock || targetMayHit(target, ClassStore)
		}
	}
	return n
}
