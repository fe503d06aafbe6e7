package upstream

import (
	"context"
	"testing"
)

// BenchmarkRelayBeginEnd measures registering a call in flight on an
// upstream and ending it, with 50 goroutines at it at once (as 50
// sessions calling one upstream do), 50 calls in flight.
func BenchmarkRelayBeginEnd(b *testing.B) {
	r := NewRelay(nil, nil)
	u := &Conn{relay: r}
	b.SetParallelism(25) // 50 goroutines on 2 cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			r.Begin(ctx, u, nil).End()
		}
	})
}
