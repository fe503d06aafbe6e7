package classify

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// countChunk is how many tools one worker claims at a time: large enough
// that claiming is cheap, small enough that workers finish together.
const countChunk = 64

// CountAll counts many tools on every available CPU and returns the counts
// in the order of tools. A cold o200k_base count is BPE-bound (about 70 µs a
// tool), so the gateway uses this for a whole catalog; counters are safe
// for concurrent use and share their cache.
func CountAll(c Counter, tools []mcp.Tool) []int {
	counts := make([]int, len(tools))
	workers := min(runtime.GOMAXPROCS(0), (len(tools)+countChunk-1)/countChunk)
	if workers <= 1 {
		for i, t := range tools {
			counts[i] = c.Count(t)
		}
		return counts
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(countChunk)) - countChunk
				if start >= len(tools) {
					return
				}
				end := min(start+countChunk, len(tools))
				for i := start; i < end; i++ {
					counts[i] = c.Count(tools[i])
				}
			}
		})
	}
	wg.Wait()
	return counts
}
