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
	return CountEach(c, len(tools), func(i int) mcp.Tool { return tools[i] })
}

// CountEach is CountAll for n tools made one at a time by tool, in any
// order and from several goroutines at once: a caller whose tools are not
// in a slice already (the gateway counts each as listed, under its exposed
// name) holds one per worker, not a copy of every definition; for 10,000
// tools that copy was 4 MB live at start-up's peak.
func CountEach(c Counter, n int, tool func(i int) mcp.Tool) []int {
	counts := make([]int, n)
	workers := min(runtime.GOMAXPROCS(0), (n+countChunk-1)/countChunk)
	if workers <= 1 {
		for i := range n {
			counts[i] = c.Count(tool(i))
		}
		return counts
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(countChunk)) - countChunk
				if start >= n {
					return
				}
				end := min(start+countChunk, n)
				for i := start; i < end; i++ {
					counts[i] = c.Count(tool(i))
				}
			}
		})
	}
	wg.Wait()
	return counts
}
