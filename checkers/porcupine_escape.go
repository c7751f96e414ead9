package checkers

import (
	"fmt"
	"html"

	"github.com/anishathalye/porcupine"
)

// escapeForVisualization makes a model safe for Porcupine's HTML page. Its script puts an
// operation's metadata and the state descriptions into the tooltip with innerHTML, and those
// strings carry node names a candidate chose (the resource logs whatever "node" a request
// names). Descriptions shown with textContent stay as they are. Metadata is rendered here,
// escaped; porcupine's default would print the raw struct.
func escapeForVisualization(m porcupine.Model) porcupine.Model {
	if describe := m.DescribeState; describe != nil {
		m.DescribeState = func(s any) string { return html.EscapeString(describe(s)) }
	}
	m.DescribeOperationMetadata = func(info any) string {
		meta, ok := info.(opMeta)
		if !ok {
			return ""
		}
		s := fmt.Sprintf("node %s, token %d", meta.node, meta.token)
		if meta.carry {
			s += ", outcome unknown"
		}
		return html.EscapeString(s)
	}
	return m
}
