package libraries

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"time"
)

func readJSON(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("candidates/libraries/%s: %w", name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("candidates/libraries/%s: %w", name, err)
	}
	return nil
}

// wholeSeconds rounds d up to whole seconds, at least minSecs: what a library that takes its
// lease or session in seconds actually uses.
func wholeSeconds(d time.Duration, minSecs float64) time.Duration {
	return time.Duration(max(minSecs, math.Ceil(d.Seconds()))) * time.Second
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
