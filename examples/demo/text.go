package demo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// Bounds of the text tools.
const (
	maxPatternChars    = 1000
	maxRegexMatches    = 1000
	maxLevenshteinLen  = 2000 // runes per side: at most 4M cells of work
	maxResultTextBytes = 4 << 20
	maxSlugLen         = 200
)

// emailPattern is a practical e-mail matcher (not the full RFC 5322 grammar).
var emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)

type textResult struct {
	Text string `json:"text" jsonschema:"the resulting text"`
}

type wordCountResult struct {
	Words       int `json:"words" jsonschema:"number of whitespace-separated words"`
	UniqueWords int `json:"unique_words" jsonschema:"number of distinct words, ignoring case and surrounding punctuation"`
	Lines       int `json:"lines" jsonschema:"number of lines (0 for empty text)"`
	Paragraphs  int `json:"paragraphs" jsonschema:"number of blocks separated by blank lines"`
}

type charCountResult struct {
	Characters  int `json:"characters" jsonschema:"number of Unicode code points (without whitespace if ignore_whitespace)"`
	Bytes       int `json:"bytes" jsonschema:"length in UTF-8 bytes"`
	Letters     int `json:"letters" jsonschema:"number of letters"`
	Digits      int `json:"digits" jsonschema:"number of decimal digits"`
	Whitespace  int `json:"whitespace" jsonschema:"number of whitespace characters"`
	Punctuation int `json:"punctuation" jsonschema:"number of punctuation and symbol characters"`
}

type replaceResult struct {
	Text         string `json:"text" jsonschema:"the text after replacement"`
	Replacements int    `json:"replacements" jsonschema:"how many occurrences were replaced"`
}

type regexMatch struct {
	Match  string   `json:"match" jsonschema:"the matched text"`
	Start  int      `json:"start" jsonschema:"byte offset where the match starts"`
	End    int      `json:"end" jsonschema:"byte offset just after the match"`
	Groups []string `json:"groups" jsonschema:"capture groups in order (empty string for a group that did not take part)"`
}

type regexResult struct {
	Matched   bool         `json:"matched" jsonschema:"whether the pattern matched at all"`
	Count     int          `json:"count" jsonschema:"number of matches returned"`
	Truncated bool         `json:"truncated" jsonschema:"true when more matches exist than max_matches"`
	Matches   []regexMatch `json:"matches" jsonschema:"the matches, in order"`
}

type base64Result struct {
	Encoded string `json:"encoded" jsonschema:"the base64 text"`
}

type hashResult struct {
	Algorithm string `json:"algorithm" jsonschema:"always sha256"`
	Encoding  string `json:"encoding" jsonschema:"hex or base64"`
	Hash      string `json:"hash" jsonschema:"the digest"`
	Bytes     int    `json:"bytes" jsonschema:"how many input bytes were hashed"`
}

type distanceResult struct {
	Distance   int     `json:"distance" jsonschema:"minimum number of single-character insertions, deletions and substitutions"`
	Similarity float64 `json:"similarity" jsonschema:"1 - distance / length of the longer string, from 0 to 1"`
}

type wrapResult struct {
	Text  string `json:"text" jsonschema:"the wrapped text"`
	Lines int    `json:"lines" jsonschema:"number of lines after wrapping"`
}

type emailsResult struct {
	Emails []string `json:"emails" jsonschema:"the addresses, in order of first appearance"`
	Count  int      `json:"count" jsonschema:"number of addresses returned"`
}

const descText = "The input text (up to 1 MiB)."

// textTool builds a tool that maps one "text" argument to another string.
func textTool(name, description string, f func(string) string) toolDef {
	return toolDef{
		newTool(name, description,
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithOutputSchema[textResult](), readOnly(),
		),
		func(_ context.Context, a args) (*mcp.CallToolResult, error) {
			s, err := a.str("text")
			if err != nil {
				return nil, err
			}
			out := f(s)
			return structured(textResult{Text: out}, out)
		},
	}
}

// textTools returns the text server's tools.
func textTools() []toolDef {
	return []toolDef{
		{newTool("word_count",
			"Count the words, distinct words, lines and paragraphs of a text.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithOutputSchema[wordCountResult](), readOnly(),
		), wordCount},
		{newTool("char_count",
			"Count the characters (Unicode code points) and UTF-8 bytes of a text, with a breakdown into letters, digits, whitespace and punctuation.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithBoolean("ignore_whitespace", mcp.Description("Leave whitespace out of the characters total (default false)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[charCountResult](), readOnly(),
		), charCount},
		textTool("to_upper", "Convert a text to UPPER CASE with full Unicode case mapping (\"straße\" -> \"STRASSE\").", toUpper),
		textTool("to_lower", "Convert a text to lower case with full Unicode case mapping (\"ÉCOLE\" -> \"école\").", toLower),
		textTool("title_case", "Convert a text to Title Case: the first letter of every word upper case, the rest lower case (\"hello wORLD\" -> \"Hello World\").", titleCase),
		{newTool("reverse_text",
			"Reverse a text, either character by character or word by word.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithString("unit", mcp.Description("What to reverse: characters (default) or words."), mcp.Enum("characters", "words"), mcp.DefaultString("characters")),
			mcp.WithOutputSchema[textResult](), readOnly(),
		), reverseText},
		{newTool("slugify",
			"Turn a text into a URL slug: accents removed, lower case, runs of other characters replaced by a separator (\"Héllo, World!\" -> \"hello-world\").",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithString("separator", mcp.Description("Separator between words: - (default) or _."), mcp.Enum("-", "_"), mcp.DefaultString("-")),
			mcp.WithInteger("max_length", mcp.Description("Maximum slug length, 1-200 (default 80); cut at a word boundary when possible."), mcp.Min(1), mcp.Max(maxSlugLen), mcp.DefaultNumber(80)),
			mcp.WithOutputSchema[textResult](), readOnly(),
		), slugify},
		{newTool("find_replace",
			"Replace occurrences of a literal string in a text (not a regular expression). Returns the new text and the number of replacements.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithString("find", mcp.Required(), mcp.Description("The literal text to look for; must not be empty."), mcp.MinLength(1)),
			mcp.WithString("replace", mcp.Required(), mcp.Description("The replacement text; may be empty to delete.")),
			mcp.WithBoolean("all", mcp.Description("Replace every occurrence (default true) or only the first."), mcp.DefaultBool(true)),
			mcp.WithBoolean("case_insensitive", mcp.Description("Match regardless of case (default false)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[replaceResult](), readOnly(),
		), findReplace},
		{newTool("regex_match",
			"Find matches of a regular expression (Go RE2 syntax, linear time) in a text, with byte offsets and capture groups.",
			mcp.WithString("pattern", mcp.Required(), mcp.Description("The regular expression, up to 1000 characters, e.g. \"(\\\\d{4})-(\\\\d{2})\"."), mcp.MinLength(1), mcp.MaxLength(maxPatternChars)),
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithInteger("max_matches", mcp.Description("Maximum matches to return, 1-1000 (default 20)."), mcp.Min(1), mcp.Max(maxRegexMatches), mcp.DefaultNumber(20)),
			mcp.WithBoolean("case_insensitive", mcp.Description("Ignore case (default false); same as starting the pattern with (?i)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[regexResult](), readOnly(),
		), regexMatchTool},
		{newTool("base64_encode",
			"Encode a text's UTF-8 bytes as base64.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithString("variant", mcp.Description("standard (default, + and /) or url (- and _, for URLs and file names)."), mcp.Enum("standard", "url"), mcp.DefaultString("standard")),
			mcp.WithOutputSchema[base64Result](), readOnly(),
		), base64Encode},
		{newTool("base64_decode",
			"Decode base64 (padded or not, standard or URL alphabet) back to UTF-8 text. Whitespace in the input is ignored.",
			mcp.WithString("data", mcp.Required(), mcp.Description("The base64 text to decode.")),
			mcp.WithString("variant", mcp.Description("standard (default) or url."), mcp.Enum("standard", "url"), mcp.DefaultString("standard")),
			mcp.WithOutputSchema[textResult](), readOnly(),
		), base64Decode},
		{newTool("sha256_hash",
			"Compute the SHA-256 digest of a text's UTF-8 bytes, as hex (default) or base64.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithString("encoding", mcp.Description("Output encoding: hex (default) or base64."), mcp.Enum("hex", "base64"), mcp.DefaultString("hex")),
			mcp.WithOutputSchema[hashResult](), readOnly(),
		), sha256Hash},
		{newTool("levenshtein_distance",
			"Edit distance between two strings: the minimum number of single-character insertions, deletions and substitutions turning one into the other, plus a 0-1 similarity.",
			mcp.WithString("a", mcp.Required(), mcp.Description("First string, up to 2000 characters.")),
			mcp.WithString("b", mcp.Required(), mcp.Description("Second string, up to 2000 characters.")),
			mcp.WithBoolean("case_insensitive", mcp.Description("Compare ignoring case (default false)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[distanceResult](), readOnly(),
		), levenshteinTool},
		{newTool("wrap_text",
			"Word-wrap a text to a maximum line width, keeping paragraphs and existing line breaks. Words longer than the width stay whole on their own line.",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithInteger("width", mcp.Description("Maximum characters per line, 10-500 (default 80)."), mcp.Min(10), mcp.Max(500), mcp.DefaultNumber(80)),
			mcp.WithOutputSchema[wrapResult](), readOnly(),
		), wrapText},
		{newTool("extract_emails",
			"Find the e-mail addresses in a text, in order of first appearance, without duplicates (compared ignoring case).",
			mcp.WithString("text", mcp.Required(), mcp.Description(descText)),
			mcp.WithOutputSchema[emailsResult](), readOnly(),
		), extractEmails},
	}
}

func wordCount(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(s)
	unique := map[string]bool{}
	for _, f := range fields {
		w := strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		if w != "" {
			unique[w] = true
		}
	}
	out := wordCountResult{Words: len(fields), UniqueWords: len(unique)}
	if s != "" {
		out.Lines = strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
	}
	inPara := false
	for line := range strings.Lines(s) {
		blank := strings.TrimSpace(line) == ""
		if !blank && !inPara {
			out.Paragraphs++
		}
		inPara = !blank
	}
	return structured(out, "")
}

func charCount(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	ignoreWS, err := a.optBool("ignore_whitespace", false)
	if err != nil {
		return nil, err
	}
	out := charCountResult{Bytes: len(s)}
	for _, r := range s {
		out.Characters++
		switch {
		case unicode.IsLetter(r):
			out.Letters++
		case unicode.IsDigit(r):
			out.Digits++
		case unicode.IsSpace(r):
			out.Whitespace++
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			out.Punctuation++
		}
	}
	if ignoreWS {
		out.Characters -= out.Whitespace
	}
	return structured(out, "")
}

// toUpper and toLower use x/text's full case mapping, which strings.ToUpper
// lacks (it keeps ß). A Caser is stateful, so each call makes its own.
func toUpper(s string) string { return cases.Upper(language.Und).String(s) }

func toLower(s string) string { return cases.Lower(language.Und).String(s) }

// titleCase upper-cases the first letter of every word and lower-cases the
// rest; an apostrophe inside a word does not start a new one ("don't").
func titleCase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prev := ' '
	for _, r := range s {
		inWord := unicode.IsLetter(prev) || unicode.IsDigit(prev) || ((prev == '\'' || prev == '’') && unicode.IsLetter(r))
		if inWord {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prev = r
	}
	return b.String()
}

func reverseText(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	unit, err := a.enum("unit", "characters", "characters", "words")
	if err != nil {
		return nil, err
	}
	var out string
	if unit == "words" {
		w := strings.Fields(s)
		slices.Reverse(w)
		out = strings.Join(w, " ")
	} else {
		r := []rune(s)
		slices.Reverse(r)
		out = string(r)
	}
	return structured(textResult{Text: out}, out)
}

func slugify(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	sep, err := a.enum("separator", "-", "-", "_")
	if err != nil {
		return nil, err
	}
	maxLen, err := a.optInteger("max_length", 80, 1, maxSlugLen)
	if err != nil {
		return nil, err
	}
	slug := makeSlug(s, sep, int(maxLen))
	if slug == "" {
		return nil, fmt.Errorf("the text has no letters or digits to make a slug from")
	}
	return structured(textResult{Text: slug}, slug)
}

// makeSlug folds accents away (é -> e) by decomposing and dropping the
// combining marks, keeps ASCII letters and digits, and joins the runs.
func makeSlug(s, sep string, maxLen int) string {
	var b strings.Builder
	pending := false
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if pending && b.Len() > 0 {
				b.WriteString(sep)
			}
			pending = false
			b.WriteRune(unicode.ToLower(r))
		default:
			pending = true
		}
	}
	slug := b.String()
	if len(slug) > maxLen {
		cut := slug[:maxLen]
		if i := strings.LastIndex(cut, sep); i > 0 && slug[maxLen:maxLen+1] != sep {
			cut = cut[:i]
		}
		slug = strings.TrimSuffix(cut, sep)
	}
	return slug
}

func findReplace(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	find, err := a.str("find")
	if err != nil {
		return nil, err
	}
	if find == "" {
		return nil, fmt.Errorf("argument \"find\" must not be empty")
	}
	repl, err := a.str("replace")
	if err != nil {
		return nil, err
	}
	all, err := a.optBool("all", true)
	if err != nil {
		return nil, err
	}
	fold, err := a.optBool("case_insensitive", false)
	if err != nil {
		return nil, err
	}
	pat := regexp.QuoteMeta(find)
	if fold {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("compiling search for %q: %w", find, err)
	}
	n := 1
	if all {
		n = -1
	}
	locs := re.FindAllStringIndex(s, n)
	grow := len(locs) * (len(repl) - len(find))
	if len(s)+grow > maxResultTextBytes {
		return nil, fmt.Errorf("the result would be %d bytes, the limit is %d", len(s)+grow, maxResultTextBytes)
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		b.WriteString(s[last:l[0]])
		b.WriteString(repl)
		last = l[1]
	}
	b.WriteString(s[last:])
	return structured(replaceResult{Text: b.String(), Replacements: len(locs)}, "")
}

func regexMatchTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	pat, err := a.str("pattern")
	if err != nil {
		return nil, err
	}
	if pat == "" {
		return nil, fmt.Errorf("argument \"pattern\" must not be empty")
	}
	if n := utf8.RuneCountInString(pat); n > maxPatternChars {
		return nil, fmt.Errorf("argument \"pattern\" is too long: %d characters, the limit is %d", n, maxPatternChars)
	}
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	limit, err := a.optInteger("max_matches", 20, 1, maxRegexMatches)
	if err != nil {
		return nil, err
	}
	fold, err := a.optBool("case_insensitive", false)
	if err != nil {
		return nil, err
	}
	if fold {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	locs := re.FindAllStringSubmatchIndex(s, int(limit)+1)
	out := regexResult{Matches: []regexMatch{}}
	if len(locs) > int(limit) {
		out.Truncated = true
		locs = locs[:limit]
	}
	for _, l := range locs {
		m := regexMatch{Match: s[l[0]:l[1]], Start: l[0], End: l[1], Groups: []string{}}
		for g := 2; g+1 < len(l); g += 2 {
			if l[g] < 0 {
				m.Groups = append(m.Groups, "")
				continue
			}
			m.Groups = append(m.Groups, s[l[g]:l[g+1]])
		}
		out.Matches = append(out.Matches, m)
	}
	out.Count = len(out.Matches)
	out.Matched = out.Count > 0
	return structured(out, "")
}

// b64 returns the padded encoding of a variant.
func b64(variant string) *base64.Encoding {
	if variant == "url" {
		return base64.URLEncoding
	}
	return base64.StdEncoding
}

func base64Encode(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	variant, err := a.enum("variant", "standard", "standard", "url")
	if err != nil {
		return nil, err
	}
	enc := b64(variant).EncodeToString([]byte(s))
	return structured(base64Result{Encoded: enc}, enc)
}

func base64Decode(_ context.Context, a args) (*mcp.CallToolResult, error) {
	data, err := a.str("data")
	if err != nil {
		return nil, err
	}
	variant, err := a.enum("variant", "standard", "standard", "url")
	if err != nil {
		return nil, err
	}
	clean := strings.Join(strings.Fields(data), "")
	enc := b64(variant)
	if !strings.HasSuffix(clean, "=") && len(clean)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	raw, err := enc.DecodeString(clean)
	if err != nil {
		hint := ""
		if variant == "standard" && strings.ContainsAny(clean, "-_") {
			hint = ` (it contains - or _: try variant "url")`
		}
		return nil, fmt.Errorf("invalid base64 input: %w%s", err, hint)
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("the decoded data (%d bytes) is binary, not UTF-8 text; this tool only returns text", len(raw))
	}
	return structured(textResult{Text: string(raw)}, string(raw))
}

func sha256Hash(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	encoding, err := a.enum("encoding", "hex", "hex", "base64")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])
	if encoding == "base64" {
		h = base64.StdEncoding.EncodeToString(sum[:])
	}
	return structured(hashResult{Algorithm: "sha256", Encoding: encoding, Hash: h, Bytes: len(s)}, h)
}

func levenshteinTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	x, err := a.str("a")
	if err != nil {
		return nil, err
	}
	y, err := a.str("b")
	if err != nil {
		return nil, err
	}
	fold, err := a.optBool("case_insensitive", false)
	if err != nil {
		return nil, err
	}
	if fold {
		x, y = strings.ToLower(x), strings.ToLower(y)
	}
	ra, rb := []rune(x), []rune(y)
	for _, p := range []struct {
		name string
		n    int
	}{{"a", len(ra)}, {"b", len(rb)}} {
		if p.n > maxLevenshteinLen {
			return nil, fmt.Errorf("argument %q is too long: %d characters, the limit is %d", p.name, p.n, maxLevenshteinLen)
		}
	}
	d := levenshtein(ra, rb)
	sim := 1.0
	if longest := max(len(ra), len(rb)); longest > 0 {
		sim = 1 - float64(d)/float64(longest)
	}
	return structured(distanceResult{Distance: d, Similarity: sim}, "")
}

// levenshtein computes the edit distance with two rows of the DP table.
func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func wrapText(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	width, err := a.optInteger("width", 80, 10, 500)
	if err != nil {
		return nil, err
	}
	out := wrap(s, int(width))
	lines := 0
	if out != "" {
		lines = strings.Count(out, "\n") + 1
	}
	return structured(wrapResult{Text: out, Lines: lines}, out)
}

// wrap greedily fills lines of at most width runes, one input line at a
// time, so existing line breaks and blank lines survive.
func wrap(s string, width int) string {
	in := strings.Split(s, "\n")
	out := make([]string, 0, len(in))
	for _, line := range in {
		words := strings.Fields(line)
		if len(words) == 0 {
			out = append(out, "")
			continue
		}
		cur, curLen := words[0], utf8.RuneCountInString(words[0])
		for _, w := range words[1:] {
			wl := utf8.RuneCountInString(w)
			if curLen+1+wl > width {
				out = append(out, cur)
				cur, curLen = w, wl
				continue
			}
			cur += " " + w
			curLen += 1 + wl
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}

func extractEmails(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	out := emailsResult{Emails: []string{}}
	seen := map[string]bool{}
	for _, m := range emailPattern.FindAllString(s, -1) {
		key := strings.ToLower(m)
		if seen[key] {
			continue
		}
		seen[key] = true
		out.Emails = append(out.Emails, m)
	}
	out.Count = len(out.Emails)
	return structured(out, "")
}
