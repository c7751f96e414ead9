package progress

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Printable makes text that may hold a candidate's output safe for a terminal: control
// characters other than newline and tab (ESC sequences that recolour, retitle or hide lines,
// carriage returns that overwrite them), Unicode bidi overrides and invalid UTF-8 are shown
// as escapes such as \x1b or \u202e instead of acting on the terminal.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

// PrintableWriter passes everything written through Printable.
type PrintableWriter struct{ W io.Writer }

func (p PrintableWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.W, Printable(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
