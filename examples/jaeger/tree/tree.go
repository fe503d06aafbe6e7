package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// query selects traces from Jaeger's /api/traces.
type query struct {
	base     string
	service  string
	limit    int
	lookback time.Duration
	tags     map[string]string
}

// apiResponse is the part of Jaeger's /api/traces answer we read.
type apiResponse struct {
	Data   []apiTrace `json:"data"`
	Errors []struct {
		Msg string `json:"msg"`
	} `json:"errors"`
}

type apiTrace struct {
	TraceID   string                `json:"traceID"`
	Spans     []apiSpan             `json:"spans"`
	Processes map[string]apiProcess `json:"processes"`
}

type apiProcess struct {
	ServiceName string `json:"serviceName"`
}

type apiSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64    `json:"startTime"` // µs since the epoch
	Duration  int64    `json:"duration"`  // µs
	Tags      []apiTag `json:"tags"`
	ProcessID string   `json:"processID"`
}

type apiTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// fetch asks Jaeger for the traces q selects.
func fetch(ctx context.Context, q query) ([]apiTrace, error) {
	v := url.Values{}
	v.Set("service", q.service)
	v.Set("limit", strconv.Itoa(q.limit))
	v.Set("lookback", q.lookback.String())
	end := time.Now()
	v.Set("start", strconv.FormatInt(end.Add(-q.lookback).UnixMicro(), 10))
	v.Set("end", strconv.FormatInt(end.UnixMicro(), 10))
	if len(q.tags) > 0 {
		b, err := json.Marshal(q.tags)
		if err != nil {
			return nil, fmt.Errorf("encoding tags: %w", err)
		}
		v.Set("tags", string(b))
	}
	u := strings.TrimSuffix(q.base, "/") + "/api/traces?" + v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("building request for %s: %w", q.base, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying Jaeger at %s (is examples/jaeger/run.sh running?): %w", q.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("querying Jaeger at %s: %s: %s", q.base, resp.Status, strings.TrimSpace(string(b)))
	}
	var out apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding Jaeger's answer: %w", err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("jaeger: %s", out.Errors[0].Msg)
	}
	return out.Data, nil
}

// shownTags are the tags printed after a span's name, in this order, with
// the short label they get.
var shownTags = []struct{ key, label string }{
	{"gen_ai.tool.name", "tool"},
	{"toolbridge.upstream", "upstream"},
	{"toolbridge.bridge.via", "via"},
	{"toolbridge.tool.class", "class"},
	{"network.transport", "transport"},
	{"server.address", "server"},
	{"toolbridge.search.hits", "hits"},
	{"error.type", "error"},
}

// render prints each trace, oldest first, as a tree of spans.
func render(w io.Writer, traces []apiTrace) error {
	bw := bufio.NewWriter(w)
	slices.SortFunc(traces, func(a, b apiTrace) int {
		return cmp.Or(cmp.Compare(start(a), start(b)), strings.Compare(a.TraceID, b.TraceID))
	})
	for i, t := range traces {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		noun := "spans"
		if len(t.Spans) == 1 {
			noun = "span"
		}
		fmt.Fprintf(bw, "trace %s  (%d %s)\n", t.TraceID, len(t.Spans), noun)
		ids := map[string]bool{}
		for _, s := range t.Spans {
			ids[s.SpanID] = true
		}
		children := map[string][]apiSpan{}
		var roots []apiSpan
		for _, s := range t.Spans {
			p := parent(s)
			if p == "" || !ids[p] {
				roots = append(roots, s) // a remote parent (the MCP client) is not in Jaeger
				continue
			}
			children[p] = append(children[p], s)
		}
		var walk func(s apiSpan, depth int)
		walk = func(s apiSpan, depth int) {
			fmt.Fprintln(bw, line(t, s, depth))
			kids := children[s.SpanID]
			sortSpans(kids)
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
		sortSpans(roots)
		for _, r := range roots {
			walk(r, 0)
		}
	}
	return bw.Flush()
}

// line is one span, indented by depth: kind and name, service, duration
// and the shown tags.
func line(t apiTrace, s apiSpan, depth int) string {
	tags := map[string]string{}
	for _, tg := range s.Tags {
		tags[tg.Key] = fmt.Sprint(tg.Value)
	}
	name := strings.Repeat("  ", depth+1) + fmt.Sprintf("%-8s %s", strings.ToUpper(tags["span.kind"]), s.OperationName)
	var b strings.Builder
	fmt.Fprintf(&b, "%-48s %-12s %9s", name, t.Processes[s.ProcessID].ServiceName, time.Duration(s.Duration)*time.Microsecond)
	for _, st := range shownTags {
		if v, ok := tags[st.key]; ok {
			fmt.Fprintf(&b, " %s=%s", st.label, v)
		}
	}
	return b.String()
}

// parent is the span's CHILD_OF reference, or "".
func parent(s apiSpan) string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// start is a trace's earliest span start.
func start(t apiTrace) int64 {
	var m int64
	for i, s := range t.Spans {
		if i == 0 || s.StartTime < m {
			m = s.StartTime
		}
	}
	return m
}

// sortSpans orders siblings by start time, then id, for stable output.
func sortSpans(s []apiSpan) {
	slices.SortFunc(s, func(a, b apiSpan) int {
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), strings.Compare(a.SpanID, b.SpanID))
	})
}
