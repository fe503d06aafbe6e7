package search

import (
	"strings"
	"unicode"
)

// intent maps words people use when they ask for something to the words
// tools use when they describe doing it. Unlike a synonym group it points
// one way: "remember" should find tools about entities and observations,
// but a query for "entities" has no reason to find a tool that says
// "remember".
type intent struct {
	// when lists the request words, matched whole and ignoring case but
	// not stemmed, so that "working" (days) does not catch "works" (at);
	// stop words are allowed ("know" is a stop word in general but an
	// intent here).
	when []string
	// means lists the tool words the request words stand for.
	means []string
}

// intents is a general vocabulary of what users say versus what tool
// catalogs say, grouped by the kind of tool. It names kinds of tools that
// recur across MCP servers and plugin catalogs (memory and knowledge
// graphs, browsers, maps, code hosts, chat, files, office documents,
// calendars, arithmetic, text and time utilities), never one catalog's
// tool names. README.md ("Search") documents it; each entry must help on
// the benchmark sets as a whole or go.
var intents = []intent{
	// Memory and knowledge graphs.
	{[]string{"remember", "memorize", "memorise", "recall", "know", "knowledge", "fact", "facts"}, []string{"memory", "knowledge", "graph", "entity", "observation"}},
	{[]string{"forget"}, []string{"delete", "remove", "memory", "entity", "observation"}},
	{[]string{"link", "connect", "relate", "relationship", "connection"}, []string{"relation"}},
	{[]string{"person", "people", "someone", "contact", "colleague"}, []string{"entity", "user", "profile"}},
	// Browsers.
	{[]string{"visit", "browse", "website", "site", "webpage", "page"}, []string{"navigate", "browser", "page"}},
	{[]string{"press", "tap", "button"}, []string{"click"}},
	{[]string{"type", "enter", "input", "form"}, []string{"fill", "input", "field"}},
	{[]string{"choose", "pick", "dropdown"}, []string{"select", "option"}},
	{[]string{"mouse", "hover"}, []string{"hover"}},
	{[]string{"scrape", "javascript", "script"}, []string{"evaluate", "execute", "javascript"}},
	// Maps.
	{[]string{"altitude", "height"}, []string{"elevation"}},
	{[]string{"route", "walk", "drive", "commute"}, []string{"directions", "travel"}},
	{[]string{"latitude", "longitude", "lat", "lng"}, []string{"geocode", "coordinates"}},
	{[]string{"nearby", "near", "restaurant", "shop", "store", "cafe"}, []string{"place", "local"}},
	{[]string{"hours", "opening", "rating", "ratings"}, []string{"place", "details"}},
	// Code hosts.
	{[]string{"pr", "prs"}, []string{"pull", "request"}},
	{[]string{"ci", "checks", "build", "pipeline"}, []string{"status", "check"}},
	{[]string{"approve", "lgtm"}, []string{"review"}},
	{[]string{"diff", "changed"}, []string{"files", "changed"}},
	{[]string{"ticket", "bug", "defect"}, []string{"issue"}},
	{[]string{"close", "reopen"}, []string{"update", "state"}},
	// Chat and mail.
	{[]string{"say", "announce", "tell", "inform"}, []string{"post", "message", "send"}},
	{[]string{"react", "emoji"}, []string{"reaction"}},
	{[]string{"members", "everyone", "team", "workspace"}, []string{"users"}},
	{[]string{"inbox"}, []string{"mail", "message"}},
	// Notes, files and documents.
	{[]string{"jot", "memo", "todo", "remind"}, []string{"note"}},
	{[]string{"label"}, []string{"tag"}},
	{[]string{"rename"}, []string{"move", "rename"}},
	{[]string{"size", "modified", "metadata", "permissions"}, []string{"info", "metadata", "size"}},
	{[]string{"structure", "hierarchy"}, []string{"tree"}},
	{[]string{"word", "docx"}, []string{"document"}},
	{[]string{"spreadsheet", "excel", "xlsx", "csv"}, []string{"sheet", "spreadsheet", "table"}},
	{[]string{"calendar", "meeting", "appointment", "schedule"}, []string{"event", "calendar"}},
	{[]string{"sql", "table", "tables", "rows", "records"}, []string{"query", "sql", "database"}},
	{[]string{"draw", "illustrate", "paint", "picture"}, []string{"generate", "image"}},
	{[]string{"web", "internet", "online", "news", "articles"}, []string{"web", "search"}},
	{[]string{"think", "reason", "reasoning"}, []string{"thinking", "thought"}},
	// Text.
	{[]string{"uppercase", "caps", "capitals"}, []string{"upper"}},
	{[]string{"lowercase"}, []string{"lower"}},
	{[]string{"capitalize", "capitalise"}, []string{"title", "case"}},
	{[]string{"backwards", "backward", "mirror"}, []string{"reverse"}},
	{[]string{"similar", "similarity", "different"}, []string{"distance", "edit"}},
	{[]string{"checksum", "digest", "fingerprint"}, []string{"hash"}},
	{[]string{"compact", "compress"}, []string{"minify", "compress"}},
	{[]string{"beautify", "indent", "prettify"}, []string{"pretty", "format"}},
	{[]string{"valid", "lint", "wellformed"}, []string{"validate"}},
	{[]string{"fields", "properties"}, []string{"keys"}},
	// Arithmetic.
	{[]string{"times", "product"}, []string{"multiply"}},
	{[]string{"minus"}, []string{"subtract"}},
	{[]string{"plus", "total"}, []string{"add", "sum"}},
	{[]string{"divided", "quotient", "ratio"}, []string{"divide"}},
	{[]string{"average", "mean", "median", "deviation", "variance"}, []string{"statistics"}},
	// Time.
	{[]string{"timestamp", "epoch"}, []string{"unix", "timestamp"}},
	{[]string{"weekday", "weekdays"}, []string{"day", "week"}},
	{[]string{"working", "workday", "workdays"}, []string{"business"}},
	{[]string{"now", "today", "clock"}, []string{"current", "time"}},
}

// intentTable maps a lowercase request word to the stems of the tool words
// it stands for.
type intentTable map[string][]string

// buildIntents stems the tool words of the vocabulary with a.
func buildIntents(a *analyzer) intentTable {
	t := intentTable{}
	for _, in := range intents {
		var means []string
		for _, w := range in.means {
			for _, s := range a.text(nil, w, nil, true) {
				if !contains(means, s) {
					means = append(means, s)
				}
			}
		}
		for _, w := range in.when {
			for _, s := range means {
				if !contains(t[w], s) {
					t[w] = append(t[w], s)
				}
			}
		}
	}
	for shape, words := range shapeMeans {
		for _, w := range words {
			t[shape] = a.text(t[shape], w, nil, true)
		}
	}
	return t
}

// Shapes of request words that say what kind of thing a tool must handle:
// a web address asks for tools that take URLs, a file name or path for
// tools that take files. Their groups are keyed by terms no text can
// produce.
const (
	shapeURL  = "\x00url"
	shapeFile = "\x00file"
)

// shapeMeans are the tool words each shape stands for.
var shapeMeans = map[string][]string{
	shapeURL:  {"url", "link", "website", "page"},
	shapeFile: {"file", "path", "directory"},
}

// commonTLDs are the top-level domains that make "name.tld" an address
// rather than a file name.
var commonTLDs = map[string]bool{
	"com": true, "org": true, "net": true, "io": true, "dev": true, "app": true,
	"ai": true, "co": true, "edu": true, "gov": true, "uk": true, "de": true,
	"fr": true, "eu": true, "info": true, "me": true,
}

// shapeOf returns shapeURL for a web address ("https://x", "www.x",
// "example.com"), shapeFile for a path or a file name ("~/notes",
// "src/main.go", "README.md"), and "" otherwise. tok is one
// whitespace-separated word of a request.
func shapeOf(tok string) string {
	tok = strings.ToLower(strings.Trim(tok, trimSet+"."))
	if tok == "" || strings.Contains(tok, "::") {
		return ""
	}
	if strings.Contains(tok, "://") || strings.HasPrefix(tok, "www.") {
		return shapeURL
	}
	if strings.HasPrefix(tok, "~") || strings.HasPrefix(tok, "./") || (strings.Contains(tok, "/") && strings.ContainsFunc(tok, unicode.IsLetter)) {
		return shapeFile
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot <= 0 {
		return ""
	}
	ext := tok[dot+1:]
	if commonTLDs[ext] {
		return shapeURL
	}
	if strings.Count(tok, ".") == 1 && len(ext) >= 2 && len(ext) <= 4 &&
		isASCIIAlnum(ext) && !isDigits(ext) && isASCIIAlnum(strings.ReplaceAll(strings.ReplaceAll(tok[:dot], "_", ""), "-", "")) {
		return shapeFile
	}
	return ""
}

// isASCIIAlnum reports a non-empty string of ASCII letters and digits.
func isASCIIAlnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
