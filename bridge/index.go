package bridge

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/toolbridge/toolbridge/bridge/search"
)

// updateIndex brings the search index in line with cat, re-indexing only
// the servers whose tools changed: a server that reconnects or sends
// list_changed does not rebuild the whole index.
func (g *Gateway) updateIndex(cat *Catalog) {
	byServer := map[string][]*Tool{}
	for _, t := range cat.Tools {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	for name := range g.serverDocs {
		if _, ok := byServer[name]; !ok {
			g.index.Remove(name)
			if g.semantic != nil {
				g.semantic.SetServer(name, nil)
			}
			delete(g.serverDocs, name)
		}
	}
	var scratch []byte
	for name, tools := range byServer {
		scratch = g.indexServer(name, tools, scratch)
	}
}

// indexServer brings the index's documents of one server in line with
// tools (sorted by ID), unless it holds them already. scratch is reused
// between calls and returned. g.rebuildMu is held.
func (g *Gateway) indexServer(name string, tools []*Tool, scratch []byte) []byte {
	var print [sha256.Size]byte
	print, scratch = docPrint(tools, scratch)
	if old, ok := g.serverDocs[name]; ok && old == print {
		return scratch
	}
	g.installDocs(name, serverDocuments(name, tools), print)
	return scratch
}

// serverDocuments are the index's documents of one server's tools. It
// reads only tools: a server that is not in the catalog yet has its
// documents made without g.rebuildMu (see prepare).
func serverDocuments(name string, tools []*Tool) []search.Document {
	docs := make([]search.Document, 0, len(tools))
	for _, t := range tools {
		raw, err := json.Marshal(indexedToolOf(t))
		if err != nil {
			raw = []byte(`{"name":` + strconv.Quote(t.Name) + `}`)
		}
		doc, err := search.DocumentFromToolJSON(name, raw)
		if err != nil {
			doc = search.Document{Name: t.Name, Description: t.Tool.Description}
		}
		doc.ID, doc.Server = t.ID, name
		if extra := t.searchText(); extra != "" {
			doc.Description = strings.TrimSpace(doc.Description + "\n" + extra)
		}
		docs = append(docs, doc)
	}
	return docs
}

// installDocs puts one server's documents, whose fingerprint is print, in
// the index. g.rebuildMu is held.
func (g *Gateway) installDocs(name string, docs []search.Document, print [sha256.Size]byte) {
	g.index.Upsert(name, docs)
	if g.semantic != nil {
		// Only texts it has no vector for are embedded, in the background.
		g.semantic.SetServer(name, semanticTools(docs))
	}
	g.serverDocs[name] = print
}

// indexedTool is what the search index reads of a tool (see
// search.DocumentFromToolJSON): marshalling only that is much cheaper
// than the whole tool.
type indexedTool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
	Annotations struct {
		Title string `json:"title,omitempty"`
	} `json:"annotations"`
}

func indexedToolOf(t *Tool) indexedTool {
	it := indexedTool{Name: t.Tool.Name, Title: t.Tool.Title, Description: t.Tool.Description, InputSchema: t.Tool.InputSchema}
	if t.Tool.RawInputSchema != nil {
		it.InputSchema = t.Tool.RawInputSchema
	}
	it.Annotations.Title = t.Tool.Annotations.Title
	return it
}

// docPrint fingerprints what the index holds of one server's tools, the
// fields indexedTool has, without marshalling them: a rebuild that leaves
// a server's tools as they were costs a hash, not a re-index. A digest
// rather than the bytes themselves, which for 10,000 tools would keep a
// second copy of every schema. scratch is reused between calls.
func docPrint(tools []*Tool, scratch []byte) ([sha256.Size]byte, []byte) {
	h := sha256.New()
	field := func(b []byte, s string) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	for _, t := range tools {
		b := field(scratch[:0], t.ID)
		b = field(b, t.Tool.Name)
		b = field(b, t.Tool.Title)
		b = field(b, t.Tool.Description)
		b = field(b, t.Tool.Annotations.Title)
		b = field(b, t.searchText())
		schema := t.Tool.RawInputSchema
		if schema == nil {
			schema, _ = json.Marshal(t.Tool.InputSchema)
		}
		b = binary.AppendUvarint(b, uint64(len(schema)))
		h.Write(b)
		h.Write(schema)
		scratch = b
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, scratch
}
