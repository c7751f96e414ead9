package reports

import (
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
)

// Every fault kind's band colour comes from its definition, rendered into the style sheet.
func TestFaultStylesFromKinds(t *testing.T) {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, "style", nil); err != nil {
		t.Fatal(err)
	}
	css := b.String()
	for _, k := range faultkinds.Kinds() {
		if want := ".f-" + k.Name + "{fill:" + k.Colour + "}"; !strings.Contains(css, want) {
			t.Errorf("style sheet lacks %s", want)
		}
		if got := faultClass(k.Name); got != "f-"+k.Name {
			t.Errorf("faultClass(%s) = %s", k.Name, got)
		}
	}
	if faultClass("no-such-kind") != "f-other" || !strings.Contains(css, ".f-other{fill:") {
		t.Error("unknown kinds must share the f-other style")
	}
}
