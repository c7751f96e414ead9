package harness

import (
	"strconv"
	"strings"
)

func itoa(i int) string           { return strconv.Itoa(i) }
func itoa64(i int64) string       { return strconv.FormatInt(i, 10) }
func joinComma(s []string) string { return strings.Join(s, ",") }

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
