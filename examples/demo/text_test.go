package demo

import (
	"fmt"
	"strings"
	"testing"
)

func TestTextTools(t *testing.T) {
	c := connect(t, "text")
	runCases(t, c, []toolCase{
		{name: "word count", tool: "word_count", args: `{"text":"The cat saw the dog.\nThe end.\n\nNew paragraph here"}`,
			want: map[string]any{"words": 10, "unique_words": 8, "lines": 4, "paragraphs": 2}},
		{name: "word count empty", tool: "word_count", args: `{"text":""}`, want: map[string]any{"words": 0, "lines": 0, "paragraphs": 0}},
		{name: "char count", tool: "char_count", args: `{"text":"Héllo, 42!\n"}`,
			want: map[string]any{"characters": 11, "bytes": 12, "letters": 5, "digits": 2, "whitespace": 2, "punctuation": 2}},
		{name: "char count ignoring whitespace", tool: "char_count", args: `{"text":"a b c","ignore_whitespace":true}`, want: map[string]any{"characters": 3}},
		{name: "upper", tool: "to_upper", args: `{"text":"straße ok"}`, want: map[string]any{"text": "STRASSE OK"}, text: "STRASSE OK"},
		{name: "lower", tool: "to_lower", args: `{"text":"ÉCOLE Normale"}`, want: map[string]any{"text": "école normale"}},
		{name: "title case", tool: "title_case", args: `{"text":"hello wORLD, don't panic-now"}`, want: map[string]any{"text": "Hello World, Don't Panic-Now"}},
		{name: "reverse characters", tool: "reverse_text", args: `{"text":"abc→é"}`, want: map[string]any{"text": "é→cba"}},
		{name: "reverse words", tool: "reverse_text", args: `{"text":"one two  three","unit":"words"}`, want: map[string]any{"text": "three two one"}},
		{name: "slugify", tool: "slugify", args: `{"text":"  Héllo, Wörld! Ça va?  "}`, want: map[string]any{"text": "hello-world-ca-va"}},
		{name: "slugify underscore and length", tool: "slugify", args: `{"text":"The Quick Brown Fox","separator":"_","max_length":12}`, want: map[string]any{"text": "the_quick"}},
		{name: "find replace all", tool: "find_replace", args: `{"text":"a.b.c","find":".","replace":"::"}`, want: map[string]any{"text": "a::b::c", "replacements": 2}},
		{name: "find replace first", tool: "find_replace", args: `{"text":"aaa","find":"a","replace":"b","all":false}`, want: map[string]any{"text": "baa", "replacements": 1}},
		{name: "find replace case-insensitive delete", tool: "find_replace", args: `{"text":"Foo foo FOO bar","find":"foo ","replace":"","case_insensitive":true}`, want: map[string]any{"text": "bar", "replacements": 3}},
		{name: "find replace no match", tool: "find_replace", args: `{"text":"abc","find":"x","replace":"y"}`, want: map[string]any{"text": "abc", "replacements": 0}},
		{name: "regex groups", tool: "regex_match", args: `{"pattern":"(\\d{4})-(\\d{2})","text":"from 2024-03 to 2025-11"}`,
			want: map[string]any{"matched": true, "count": 2, "truncated": false, "matches": []map[string]any{
				{"match": "2024-03", "start": 5, "end": 12, "groups": []string{"2024", "03"}},
				{"match": "2025-11", "start": 16, "end": 23, "groups": []string{"2025", "11"}},
			}}},
		{name: "regex truncated", tool: "regex_match", args: `{"pattern":"a","text":"aaaa","max_matches":3}`, want: map[string]any{"count": 3, "truncated": true}},
		{name: "regex no match", tool: "regex_match", args: `{"pattern":"z","text":"abc"}`, want: map[string]any{"matched": false, "count": 0, "matches": []any{}}},
		{name: "regex case-insensitive", tool: "regex_match", args: `{"pattern":"hello","text":"HeLLo","case_insensitive":true}`, want: map[string]any{"matched": true}},
		{name: "base64 encode", tool: "base64_encode", args: `{"text":"hello world"}`, want: map[string]any{"encoded": "aGVsbG8gd29ybGQ="}},
		{name: "base64 encode url", tool: "base64_encode", args: `{"text":"\u00ff\u00fe?","variant":"url"}`, want: map[string]any{"encoded": "w7_Dvj8="}},
		{name: "base64 decode", tool: "base64_decode", args: `{"data":"aGVsbG8g\nd29ybGQ="}`, want: map[string]any{"text": "hello world"}},
		{name: "base64 decode unpadded", tool: "base64_decode", args: `{"data":"aGk"}`, want: map[string]any{"text": "hi"}},
		{name: "sha256 of abc", tool: "sha256_hash", args: `{"text":"abc"}`,
			want: map[string]any{"hash": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "algorithm": "sha256", "bytes": 3}},
		{name: "sha256 of empty in base64", tool: "sha256_hash", args: `{"text":"","encoding":"base64"}`,
			want: map[string]any{"hash": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}},
		{name: "levenshtein", tool: "levenshtein_distance", args: `{"a":"kitten","b":"sitting"}`, want: map[string]any{"distance": 3},
			check: func(t *testing.T, got map[string]any) {
				if s := got["similarity"].(float64); s < 0.571 || s > 0.572 {
					t.Errorf("similarity = %v, want 4/7", s)
				}
			}},
		{name: "levenshtein unicode and case", tool: "levenshtein_distance", args: `{"a":"Ébène","b":"ébène","case_insensitive":true}`, want: map[string]any{"distance": 0, "similarity": 1}},
		{name: "levenshtein empty", tool: "levenshtein_distance", args: `{"a":"","b":"abc"}`, want: map[string]any{"distance": 3, "similarity": 0}},
		{name: "wrap", tool: "wrap_text", args: `{"text":"the quick brown fox jumps over the lazy dog","width":10}`,
			want: map[string]any{"text": "the quick\nbrown fox\njumps over\nthe lazy\ndog", "lines": 5}},
		{name: "wrap keeps paragraphs and long words", tool: "wrap_text", args: `{"text":"a b\n\nsupercalifragilistic x","width":10}`,
			want: map[string]any{"text": "a b\n\nsupercalifragilistic\nx", "lines": 4}},
		{name: "emails", tool: "extract_emails", args: `{"text":"Mail ana@example.com, Bob <bob.smith+tag@mail.example.org>; again ANA@example.com. not@valid"}`,
			want: map[string]any{"emails": []string{"ana@example.com", "bob.smith+tag@mail.example.org"}, "count": 2}},
		{name: "no emails", tool: "extract_emails", args: `{"text":"nothing here"}`, want: map[string]any{"emails": []any{}, "count": 0}},

		// Broken input.
		{name: "bad base64", tool: "base64_decode", args: `{"data":"not base64!!"}`, errHas: []string{"invalid base64 input", "illegal base64 data at input byte"}},
		{name: "url base64 as standard", tool: "base64_decode", args: `{"data":"w7_Dvj8="}`, errHas: []string{"invalid base64", `try variant "url"`}},
		{name: "binary base64", tool: "base64_decode", args: `{"data":"//79"}`, errHas: []string{"binary, not UTF-8 text"}},
		{name: "bad regex", tool: "regex_match", args: `{"pattern":"(a","text":"a"}`, errHas: []string{"invalid regular expression", "missing closing )"}},
		{name: "regex pattern too long", tool: "regex_match", args: fmt.Sprintf(`{"pattern":%q,"text":"a"}`, strings.Repeat("a", 1001)), errHas: []string{`"pattern" is too long`}},
		{name: "regex max matches", tool: "regex_match", args: `{"pattern":"a","text":"a","max_matches":0}`, errHas: []string{`"max_matches" must be between 1 and 1000`}},
		{name: "find empty", tool: "find_replace", args: `{"text":"abc","find":"","replace":"x"}`, errHas: []string{`"find" must not be empty`}},
		{name: "find replace too big", tool: "find_replace", args: fmt.Sprintf(`{"text":%q,"find":"a","replace":%q}`, strings.Repeat("a", 1000), strings.Repeat("b", 5000)), errHas: []string{"the limit is"}},
		{name: "slug of punctuation", tool: "slugify", args: `{"text":"!!! ???"}`, errHas: []string{"no letters or digits"}},
		{name: "slug bad separator", tool: "slugify", args: `{"text":"a b","separator":"+"}`, errHas: []string{`"separator" must be one of -, _`}},
		{name: "levenshtein too long", tool: "levenshtein_distance", args: fmt.Sprintf(`{"a":%q,"b":"x"}`, strings.Repeat("a", 2001)), errHas: []string{`"a" is too long: 2001 characters`}},
		{name: "wrap too narrow", tool: "wrap_text", args: `{"text":"a","width":3}`, errHas: []string{`"width" must be between 10 and 500`}},
		{name: "reverse bad unit", tool: "reverse_text", args: `{"text":"a","unit":"lines"}`, errHas: []string{`"unit" must be one of characters, words`}},
		{name: "hash bad encoding", tool: "sha256_hash", args: `{"text":"a","encoding":"base32"}`, errHas: []string{`"encoding" must be one of hex, base64`}},
		{name: "upper with a number", tool: "to_upper", args: `{"text":42}`, errHas: []string{`argument "text" must be a string, got number`}},
		{name: "char count bad flag", tool: "char_count", args: `{"text":"a","ignore_whitespace":"yes"}`, errHas: []string{`"ignore_whitespace" must be a boolean, got string`}},
	})
}

func TestTextInputBound(t *testing.T) {
	c := connect(t, "text")
	big := strings.Repeat("a", maxStringBytes+1)
	res := call(t, c, "word_count", fmt.Sprintf(`{"text":%q}`, big))
	if !res.IsError || !strings.Contains(textOf(res), `"text" is too long`) {
		t.Errorf("a %d-byte text: isError=%v %q, want a too-long error", len(big), res.IsError, textOf(res))
	}
}

func TestLevenshtein(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"flaw", "lawn", 2}, {"gumbo", "gambol", 2}, {"日本語", "日本", 1},
	}
	for _, tt := range tests {
		if got := levenshtein([]rune(tt.a), []rune(tt.b)); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := levenshtein([]rune(tt.b), []rune(tt.a)); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}
