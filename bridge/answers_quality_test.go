package bridge

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// TestAdjustmentsKeepTheTasksRecall holds the gateway's adjustments of the
// index's ranking (the deprecated and destructive penalties, see adjust)
// to the tasks set of bridge/search: 208 plain-language requests over the
// reference and demo servers, the catalog they were written for. Recall@5
// with the adjustments must not fall below the index's own; the figures
// print with -v. (TestRetrievalQuality in bridge/search holds the index's
// ranking itself, which the adjustments do not touch.)
func TestAdjustmentsKeepTheTasksRecall(t *testing.T) {
	ups := map[string]*server.MCPServer{}
	for _, path := range []string{"testdata/reference-servers/catalog.json", "search/testdata/demo/catalog.json"} {
		for _, s := range catalogServers(t, path) {
			ups[s.name] = s.serve(0)
		}
	}
	g, _ := startGateway(t, bridgeConfig(), ups)
	cat := g.Catalog()
	f, err := os.Open("search/testdata/tasks/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int
	var index, adjusted float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			ID, Query string
			Relevant  []string
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		hits := g.index.Search(q.Query, 20).Hits
		var before, after []string
		for _, h := range hits {
			before = append(before, h.ID)
		}
		for _, r := range adjust(cat, q.Query, hits, nil) {
			after = append(after, r.t.ID)
		}
		recall := func(ids []string) float64 {
			found := 0
			for _, id := range q.Relevant {
				if slices.Contains(ids[:min(5, len(ids))], id) {
					found++
				}
			}
			return float64(found) / float64(len(q.Relevant))
		}
		b, a := recall(before), recall(after)
		if a != b {
			t.Logf("%s %q: R@5 %.2f -> %.2f\n  index    %v\n  adjusted %v", q.ID, q.Query, b, a, before[:min(5, len(before))], after[:min(5, len(after))])
		}
		index += b
		adjusted += a
		n++
	}
	if n != 208 {
		t.Fatalf("read %d tasks, want 208", n)
	}
	t.Logf("tasks Recall@5: index %.3f, with the adjustments %.3f", index/float64(n), adjusted/float64(n))
	if adjusted < index {
		t.Errorf("the adjustments lower Recall@5 on the tasks: %.3f -> %.3f", index/float64(n), adjusted/float64(n))
	}
}
