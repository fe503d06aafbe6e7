package search

import (
	"slices"
	"testing"
)

func TestSplitIdentifier(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_issue", []string{"create", "issue"}},
		{"get-annotated-message", []string{"get", "annotated", "message"}},
		{"ChaDri.change_drink", []string{"Cha", "Dri", "change", "drink"}},
		{"changeDrink", []string{"change", "Drink"}},
		{"HTTPServer", []string{"HTTP", "Server"}},
		{"getHTTPResponse", []string{"get", "HTTP", "Response"}},
		{"get2fa", []string{"get", "2", "fa"}},
		{"Weather_1_GetWeather", []string{"Weather", "1", "Get", "Weather"}},
		{"ÄrgerÜberPrüfung", []string{"Ärger", "Über", "Prüfung"}},
		{"mcp__github__create_issue", []string{"mcp", "github", "create", "issue"}},
		{"ALLCAPS", []string{"ALLCAPS"}},
		{"__", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitIdentifier(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitIdentifier(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAnalyzerText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"snake name", "create_issue", []string{"creat", "issu"}},
		{"camel and dots keep the camel word whole too", "ChaDri.change_drink", []string{"cha", "dri", "chadri", "chang", "drink"}},
		{"brand names", "Create a GitHub issue", []string{"creat", "git", "hub", "github", "issu"}},
		{"punctuation", "Weather, world! (test) [x]; a/b", []string{"weather", "world", "test"}},
		{"stop words and filler", "Could you please get me the files?", []string{"get", "file"}},
		{"digits are kept", "top 10 results", []string{"top", "10", "result"}},
		{"chinese bigrams", "获取天气", []string{"获取", "取天", "天气"}},
		{"single CJK character", "天", []string{"天"}},
		{"mixed scripts", "查询weather数据", []string{"查询", "weather", "数据"}},
		{"japanese kana", "ファイル", []string{"ファ", "ァイ", "イル"}},
		{"korean", "날씨 정보", []string{"날씨", "정보"}},
		{"accents are lowercased, not stemmed", "Café CRÈME", []string{"café", "crème"}},
		{"empty", "", nil},
		{"only punctuation", " -- ... !!", nil},
	}
	a := newAnalyzer()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.text(nil, tt.in, nil, false); !slices.Equal(got, tt.want) {
				t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWholeForms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_issue", []string{"create_issue", "createissue"}},
		{"`create_issue`", []string{"create_issue", "createissue"}},
		{"ChaDri.change_drink", []string{"chadri.change_drink", "chadrichangedrink"}},
		{"getWeather", []string{"getweather"}},
		{"search", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := wholeForms(nil, tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("wholeForms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAnalyzerCachesOnlyWhenIndexing(t *testing.T) {
	a := newAnalyzer()
	a.text(nil, "searching", nil, false)
	if _, ok := a.cache.Load("searching"); ok {
		t.Fatal("a query stem was cached; queries must not grow the cache")
	}
	a.text(nil, "searching", nil, true)
	if v, ok := a.cache.Load("searching"); !ok || v != "search" {
		t.Fatalf("indexing did not cache the stem: %v %v", v, ok)
	}
}

func TestSynonymsAreStemmedAndSymmetric(t *testing.T) {
	a := newAnalyzer()
	syn := buildSynonyms(a)
	for _, pair := range [][2]string{{"get", "fetch"}, {"fetch", "retriev"}, {"creat", "add"}, {"delet", "remov"}, {"search", "find"}, {"list", "enumer"}} {
		if !slices.Contains(syn[pair[0]], pair[1]) || !slices.Contains(syn[pair[1]], pair[0]) {
			t.Errorf("synonyms %q and %q are not linked both ways: %q / %q", pair[0], pair[1], syn[pair[0]], syn[pair[1]])
		}
	}
	for term, alts := range syn {
		if slices.Contains(alts, term) {
			t.Errorf("%q lists itself as a synonym", term)
		}
	}
}
