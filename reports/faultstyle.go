package reports

import (
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
)

// otherFaultColour paints faults of kinds this build does not know (an older history).
const otherFaultColour = "#57606a"

// cssColour guards the style sheet: a kind's colour is a hex colour, nothing else.
var cssColour = regexp.MustCompile(`^#[0-9a-fA-F]{3,8}$`)

// faultStyles is the style of every fault kind's bands, from the kinds' own definitions.
func faultStyles() template.CSS {
	var b strings.Builder
	for _, k := range faultkinds.Kinds() {
		if cssColour.MatchString(k.Colour) {
			fmt.Fprintf(&b, ".f-%s{fill:%s}", k.Name, k.Colour)
		}
	}
	fmt.Fprintf(&b, ".f-other{fill:%s}", otherFaultColour)
	return template.CSS(b.String())
}
