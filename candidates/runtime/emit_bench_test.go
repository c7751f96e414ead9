package runtime

import (
	"io"
	"testing"
)

func BenchmarkEmitWrite(b *testing.B) {
	em := NewEmitter(io.Discard)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		em.Write(42, "c1-k3x9-17", 1, "accepted")
	}
}
