package search

// synonymGroups are words that tool names, descriptions and requests use
// interchangeably. They are general tool vocabulary (CRUD verbs and common
// abbreviations), never domain knowledge of a benchmark. A query word gets
// every other word of each group it belongs to as an alternative, scored at
// Options.SynonymWeight.
var synonymGroups = [][]string{
	{"get", "fetch", "retrieve", "read", "obtain", "load", "lookup"},
	{"create", "add", "new", "make", "generate", "insert"},
	{"delete", "remove", "erase", "destroy", "purge", "drop"},
	{"update", "edit", "modify", "change", "alter", "patch", "amend"},
	{"list", "enumerate", "show", "display", "view"},
	{"search", "find", "query", "lookup", "locate", "seek", "discover"},
	{"send", "post", "message", "notify", "publish"},
	{"run", "execute", "exec", "invoke", "launch", "trigger"},
	{"write", "save", "store", "persist"},
	{"stop", "halt", "terminate", "kill", "cancel", "abort"},
	{"check", "verify", "validate"},
	{"calculate", "compute", "calc"},
	{"convert", "transform"},
	{"summarize", "summary", "summarise"},
	{"buy", "purchase"},
	{"book", "reserve", "reservation", "booking"},
	{"image", "picture", "photo", "img", "pic"},
	{"repo", "repository"},
	{"dir", "directory", "folder"},
	{"msg", "message"},
	{"info", "information", "detail", "details"},
	{"config", "configuration", "settings"},
	{"doc", "document"},
	{"db", "database"},
	{"url", "link"},
	{"id", "identifier"},
	{"app", "application"},
	{"stat", "stats", "statistics"},
	{"email", "mail"},
}

// synonymTable maps a stem to the stems of its synonyms.
type synonymTable map[string][]string

// buildSynonyms stems the groups with a so that lookups happen on the terms
// the analyzer produces.
func buildSynonyms(a *analyzer) synonymTable {
	t := synonymTable{}
	for _, g := range synonymGroups {
		stems := make([]string, 0, len(g))
		for _, w := range g {
			stems = a.text(stems, w, nil, true)
		}
		for _, s := range stems {
			for _, o := range stems {
				if o != s && !contains(t[s], o) {
					t[s] = append(t[s], o)
				}
			}
		}
	}
	return t
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
