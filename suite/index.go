package suite

import "github.com/splitbrain-chaos/splitbrain/reports"

// renderIndex regenerates store/index.html (runs newest first and the recipe × fault
// leaderboard).
func renderIndex(storeRoot string) error { return reports.RenderIndex(storeRoot) }
