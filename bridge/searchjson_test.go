package bridge

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// searchResultCases are tool_search answers of every shape: empty and nil
// slices (which json.Marshal writes differently), every optional field
// set, text that needs escapes, and scores of every magnitude.
func searchResultCases() []SearchResult {
	full := SearchHit{
		ID: "git<hub>::create_issue", Server: "git<hub>", Name: "create_issue",
		Description: "Create an issue — \"quoted\" & <tagged>\nsecond line\u2028\xff",
		Parameters:  []ParamSummary{{Name: "owner", Type: "string", Required: true}, {Name: "labels", Type: "array<string>"}},
		Score:       12.345, AlreadyListed: true, Weak: true, Deprecated: true, Instead: "github::create_issue_v2",
		Annotations: []string{"read-only", "idempotent"},
		Flags:       []trust.Flag{{Rule: trust.RuleHiddenTag, Where: "description", Why: "<IMPORTANT> addresses the model"}},
	}
	return []SearchResult{
		{},
		{Tools: []SearchHit{}, Ranking: RankingLexical},
		{Tools: []SearchHit{full, {ID: "a::b", Parameters: []ParamSummary{}}, {ID: "a::c"}}, TotalDeferred: 9997, Ranking: RankingSemantic,
			RankingNote: "the semantic rerank has embedded 3 of 9 tools so far"},
		{Tools: []SearchHit{}, TotalDeferred: 3, DidYouMean: []string{"a::b", "c::d"}, FilteredOut: 2,
			Catalog: []CatalogServer{{Server: "s1", Tools: []string{"x", "y"}, Total: 30}, {Server: "s2"}, {Server: "s3", Tools: []string{}}},
			Partial: true, Held: &HeldTools{Tools: 4, Servers: []string{"repo"}, Review: ReviewCommand}, Ranking: RankingLexical},
		{DidYouMean: []string{}, Catalog: []CatalogServer{}, Held: &HeldTools{Servers: []string{}}},
		{Tools: []SearchHit{{Score: 0}, {Score: math.Copysign(0, -1)}, {Score: -1.5}, {Score: 1e-7}, {Score: 1.234e-9},
			{Score: 1e-6}, {Score: 1e20}, {Score: 1e21}, {Score: 123456789.125}, {Score: -3e-300}, {Score: math.MaxFloat64},
			{Score: math.SmallestNonzeroFloat64}, {Score: 0.1 + 0.2}}},
	}
}

// TestSearchResultAppendMatchesMarshal: SearchResult.appendJSON writes what
// json.Marshal writes, for answers of every shape.
func TestSearchResultAppendMatchesMarshal(t *testing.T) {
	for i, r := range searchResultCases() {
		checkSearchResultAppend(t, r)
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
}

// checkSearchResultAppend holds appendJSON to json.Marshal for r, and the
// whole answer encodeAnswer writes with r as its structured content to
// json.Marshal of the response, as mcp-go's stdio server writes it.
func checkSearchResultAppend(t *testing.T, r SearchResult) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := r.appendJSON([]byte("prefix"))
	switch {
	case wantErr != nil:
		if err == nil {
			t.Errorf("appendJSON(%+v) = %s, json.Marshal fails: %v", r, got, wantErr)
		}
		return
	case err != nil || string(got) != "prefix"+string(want):
		t.Errorf("appendJSON:\n%s %v\njson.Marshal:\n%s", got, err, want)
	}
	res := searchResult("q", r, searchFilter{})
	if !plainResult(res) {
		t.Fatal("a tool_search answer does not take appendPlainAnswer's path")
	}
	for _, modern := range []bool{false, true} {
		if modern {
			res.ResultType = mcp.ResultTypeComplete
			res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: serverName, Version: Version})
		}
		resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(7)), any(res))
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := encodeAnswer(resp); err != nil || string(got) != string(want)+"\n" {
			t.Errorf("encodeAnswer:\n%s %v\njson.Marshal:\n%s", got, err, want)
		}
	}
}

// TestSearchResultAppendRefusesWhatMarshalRefuses: a score json.Marshal
// cannot write is an error, not an answer.
func TestSearchResultAppendRefusesWhatMarshalRefuses(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := SearchResult{Tools: []SearchHit{{ID: "a::b", Score: f}}}
		if _, err := r.appendJSON(nil); err == nil {
			t.Errorf("score %v: no error", f)
		}
		resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(1)), any(&mcp.CallToolResult{StructuredContent: r}))
		if _, err := encodeAnswer(resp); err == nil {
			t.Errorf("score %v: encodeAnswer has no error", f)
		}
	}
}

// TestToolSearchAnswersEncodeAsBefore: the answers a gateway gives over the
// reference tools (hits, no match with did-you-mean, the catalog of an
// empty query, filtered results) encode to json.Marshal's bytes.
func TestToolSearchAnswersEncodeAsBefore(t *testing.T) {
	g := newTestGateway(t, config.ModeOn, synthUpstreams(t, 400))
	queries := append(keywordQueries(t), "", "zzqx unmatched", "creat_isue", "read file <html> & — ü")
	ctx := context.Background()
	for i, q := range queries {
		args := map[string]any{"query": q}
		switch i % 3 {
		case 1:
			args["limit"] = 10
		case 2:
			args["read_only"] = true
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = toolid.MetaSearch
		req.Params.Arguments = args
		res, err := g.handleSearch(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("tool_search %q: %v %+v", q, err, res)
		}
		sr, ok := res.StructuredContent.(SearchResult)
		if !ok {
			t.Fatalf("tool_search's structured content is a %T", res.StructuredContent)
		}
		checkSearchResultAppend(t, sr)
		if text := res.Content[0].(mcp.TextContent).Text; len(text) > searchTextSize(q, sr) {
			t.Errorf("tool_search %q: searchTextSize %d, the text is %d bytes", q, searchTextSize(q, sr), len(text))
		}
		if s, _ := sr.appendJSON(nil); sr.sizeHint() < len(s) {
			t.Errorf("tool_search %q: sizeHint %d, the encoding is %d bytes", q, sr.sizeHint(), len(s))
		}
		resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(i)), any(res))
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := encodeAnswer(resp); err != nil || string(got) != string(want)+"\n" {
			t.Fatalf("tool_search %q: encodeAnswer:\n%s %v\njson.Marshal:\n%s", q, got, err, want)
		}
	}
}

func FuzzSearchResultAppend(f *testing.F) {
	f.Add("github::create_issue", "Create an issue — <b>\n", "owner", "string", 12.5, true, 3, "lexical")
	f.Add("", "", "", "", 1e-7, false, 0, "")
	f.Add("a\xffb", "\u2028\u2029\x00", "p\"", "enum[\"a\"]", -1e21, true, -4, "semantic")
	f.Fuzz(func(t *testing.T, id, desc, param, typ string, score float64, flag bool, n int, ranking string) {
		hit := SearchHit{ID: id, Server: param, Name: typ, Description: desc, Score: score,
			AlreadyListed: flag, Weak: !flag, Deprecated: flag, Instead: desc}
		r := SearchResult{TotalDeferred: n, FilteredOut: -n, Partial: flag, Ranking: ranking, RankingNote: desc}
		if flag {
			hit.Parameters = []ParamSummary{{Name: param, Type: typ, Required: flag}}
			hit.Annotations = []string{typ, id}
			hit.Flags = []trust.Flag{{Rule: typ, Where: param, Why: desc}}
			r.DidYouMean = []string{id}
			r.Catalog = []CatalogServer{{Server: param, Tools: strings.Fields(desc), Total: n}}
			r.Held = &HeldTools{Tools: n, Servers: []string{id}, Review: desc}
		}
		r.Tools = []SearchHit{hit, {ID: desc}}
		checkSearchResultAppend(t, r)
	})
}

// TestToolSearchAnswerAllocations: a tool_search answer is encoded into
// one buffer, allocated once; json.Marshal of it (through mcp-go's
// CallToolResult.MarshalJSON, a map, reflection) took about 60
// allocations and copied the answer three times.
func TestToolSearchAnswerAllocations(t *testing.T) {
	g := newTestGateway(t, config.ModeOn, synthUpstreams(t, 400))
	req := mcp.CallToolRequest{}
	req.Params.Name = toolid.MetaSearch
	req.Params.Arguments = map[string]any{"query": "create an issue in a repository", "limit": 5}
	res, err := g.handleSearch(context.Background(), req)
	if err != nil || res.IsError || len(res.StructuredContent.(SearchResult).Tools) == 0 {
		t.Fatalf("tool_search: %v %+v", err, res)
	}
	res.ResultType = mcp.ResultTypeComplete
	res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: serverName, Version: Version})
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(7)), any(res))
	// 3 (24 before); the race detector's pool takes one more.
	want := 3.0
	if raceEnabled {
		want++
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = encodeAnswer(resp) }); n > want {
		t.Errorf("encodeAnswer of a tool_search answer: %v allocations, want at most %v", n, want)
	}
}

// TestAppendIDMatchesMarshal: appendID writes an id as json.Marshal does,
// for the kinds the fast path and mcp-go give it and any other.
func TestAppendIDMatchesMarshal(t *testing.T) {
	for _, v := range []any{"1", "x<y>\n\xff", "", float64(1), 1.5, -0.0, 1e21, 1e-7, 12345678901234567890.0,
		int64(7), int64(-1 << 63), 3, nil, json.Number("12")} {
		id := mcp.NewRequestId(v)
		want, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := appendID([]byte("["), id); err != nil || string(got) != "["+string(want) {
			t.Errorf("appendID(%#v) = %s %v, json.Marshal writes %s", v, got, err, want)
		}
	}
}

// TestEncodeAnswerOtherAnswers: the answers appendPlainAnswer does not
// write (errors, images, annotated text, structured content as a map,
// requests for input) are json.Marshal's bytes and a newline.
func TestEncodeAnswerOtherAnswers(t *testing.T) {
	annotated := mcp.NewTextContent("a <b> & c\n")
	annotated.Annotations = &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}}
	withState := &mcp.CallToolResult{Content: []mcp.Content{}}
	withState.RequestState = "state\u2028"
	results := []any{
		&mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent("aGk=", "image/png")}},
		&mcp.CallToolResult{Content: []mcp.Content{annotated}, IsError: true},
		&mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("x")}, StructuredContent: map[string]any{"k": "<v>", "n": 1.5}},
		withState,
		map[string]any{"tools": []string{"a"}},
	}
	var msgs []mcp.JSONRPCMessage
	for i, r := range results {
		msgs = append(msgs, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(i)), r))
	}
	msgs = append(msgs,
		mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("x<y>"),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, "tool 'a&b' not found", nil)})
	for _, m := range msgs {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeAnswer(m)
		if err != nil || string(got) != string(want)+"\n" {
			t.Errorf("encodeAnswer:\n%s %v\njson.Marshal:\n%s", got, err, want)
		}
	}
}

// TestAnswerBuffersAreReused: an answer written and handed back with
// recycleAnswer lends its buffer to the next one, which is written whole
// over it; before, every answer allocated its own (a tool_search answer
// is 2 to 5 KB).
func TestAnswerBuffersAreReused(t *testing.T) {
	g := newTestGateway(t, config.ModeOn, synthUpstreams(t, 400))
	var resps []mcp.JSONRPCMessage
	var want [][]byte
	for i, q := range []string{"create an issue in a repository", "read a file", "zzqx unmatched", ""} {
		req := mcp.CallToolRequest{}
		req.Params.Name = toolid.MetaSearch
		req.Params.Arguments = map[string]any{"query": q}
		res, err := g.handleSearch(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("tool_search %q: %v %+v", q, err, res)
		}
		resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(i)), any(res))
		w, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		resps, want = append(resps, resp), append(want, append(w, '\n'))
	}
	// Answers of different lengths, each over the last one's buffer.
	for round := range 3 {
		for i, resp := range resps {
			got, err := encodeAnswer(resp)
			if err != nil || string(got) != string(want[i]) {
				t.Fatalf("round %d, answer %d:\n%s %v\nwant\n%s", round, i, got, err, want[i])
			}
			recycleAnswer(got)
		}
	}
	checkAnswerBufferReused(t, resps[0], len(want[0]))
}

// TestSearchResultCasesSetEveryField keeps searchResultCases whole: every
// field of SearchResult and of the types in it is set in some case, so
// that a field added later (and left out of appendJSON) fails
// TestSearchResultAppendMatchesMarshal, even one json.Marshal omits when
// empty.
func TestSearchResultCasesSetEveryField(t *testing.T) {
	set := map[string]bool{} // "Type.Field" seen non-zero
	all := map[string]bool{} // every exported "Type.Field"
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			ty := v.Type()
			for i := range ty.NumField() {
				f := ty.Field(i)
				if !f.IsExported() || f.Tag.Get("json") == "-" {
					continue
				}
				key := ty.Name() + "." + f.Name
				all[key] = true
				if !v.Field(i).IsZero() {
					set[key] = true
				}
				walk(v.Field(i))
			}
		}
	}
	for _, r := range searchResultCases() {
		walk(reflect.ValueOf(r))
	}
	for key := range all {
		if !set[key] {
			t.Errorf("no case of searchResultCases sets %s: set it, so that appendJSON is held to json.Marshal for it", key)
		}
	}
}
