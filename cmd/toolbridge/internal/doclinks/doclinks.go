// Package doclinks checks the relative links of Markdown files: that each
// names a file that exists and, with a #fragment, a heading that GitHub
// renders with that anchor. The README and docs/ are read on GitHub, where
// a broken link is a dead end for the newcomer who followed it.
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is one link that does not resolve.
type Broken struct {
	File   string // the Markdown file the link is in
	Line   int    // its line, from 1
	Target string // the link as written
	Reason string // why it does not resolve
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

var (
	// linkTarget matches the target of an inline link or image,
	// [text](target) or [text](target "title"); the text may span lines,
	// the target may not.
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition, [label]: target.
	refDef = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	// codeSpan matches an inline code span; its contents are not links.
	codeSpan = regexp.MustCompile("(`+)[^`]+?(`+)")
	// htmlAnchor matches an explicit anchor, <a name="x"> or id="x".
	htmlAnchor = regexp.MustCompile(`(?i)<a\s[^>]*(?:name|id)="([^"]+)"`)
)

// Check returns the broken relative links of the Markdown files given.
// Links to other schemes (https:, mailto:) are not followed.
func Check(files ...string) ([]Broken, error) {
	anchors := map[string]map[string]bool{} // cleaned path -> anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		a := Anchors(string(raw))
		anchors[path] = a
		return a, nil
	}
	var broken []Broken
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		for _, l := range Links(string(raw)) {
			reason, err := resolve(file, l.Target, anchorsOf)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				broken = append(broken, Broken{File: file, Line: l.Line, Target: l.Target, Reason: reason})
			}
		}
	}
	return broken, nil
}

// resolve says why target, a link in file, does not resolve, or "" when
// it does.
func resolve(file, target string, anchorsOf func(string) (map[string]bool, error)) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "not a valid link: " + err.Error(), nil
	}
	if u.Scheme != "" || u.Host != "" {
		return "", nil // external: not checked
	}
	if strings.HasPrefix(u.Path, "/") {
		return "absolute path: GitHub resolves it against the site, not the repository", nil
	}
	dest := file
	if u.Path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(u.Path))
		info, err := os.Stat(dest)
		if err != nil {
			return "no such file or directory " + filepath.ToSlash(dest), nil
		}
		if info.IsDir() {
			if u.Fragment != "" {
				return "a #fragment on a directory", nil
			}
			return "", nil
		}
	}
	if u.Fragment == "" {
		return "", nil
	}
	if !strings.HasSuffix(strings.ToLower(dest), ".md") {
		// GitHub's #L12 line anchors in source files.
		if regexp.MustCompile(`^L\d+(-L\d+)?$`).MatchString(u.Fragment) {
			return "", nil
		}
		return "a #fragment on a file that is not Markdown", nil
	}
	a, err := anchorsOf(filepath.Clean(dest))
	if err != nil {
		return "", err
	}
	if !a[u.Fragment] {
		return fmt.Sprintf("no heading with anchor #%s in %s", u.Fragment, filepath.ToSlash(dest)), nil
	}
	return "", nil
}

// Link is one link found in a Markdown text.
type Link struct {
	Line   int
	Target string
}

// Links returns the targets of the inline links, images and reference
// definitions of a Markdown text, outside code blocks and code spans.
func Links(md string) []Link {
	var links []Link
	for _, block := range prose(md) {
		text := codeSpan.ReplaceAllStringFunc(block.text, func(s string) string {
			// Keep the line count: replace everything but newlines.
			return strings.Map(func(r rune) rune {
				if r == '\n' {
					return r
				}
				return ' '
			}, s)
		})
		for _, re := range []*regexp.Regexp{linkTarget, refDef} {
			for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
				links = append(links, Link{
					Line:   block.line + strings.Count(text[:m[2]], "\n"),
					Target: text[m[2]:m[3]],
				})
			}
		}
	}
	return links
}

// block is a run of lines outside fenced code, with the line it starts on.
type block struct {
	line int
	text string
}

// prose splits md into the paragraphs outside fenced code blocks.
func prose(md string) []block {
	var out []block
	var cur []string
	start, fence := 0, ""
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{line: start, text: strings.Join(cur, "\n")})
		}
		cur = nil
	}
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			flush()
			fence = trimmed[:3]
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// Anchors returns the anchors GitHub gives a Markdown text's ATX headings
// (with -1, -2 … for repeats) and its explicit <a name|id> anchors.
func Anchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, b := range prose(md) {
		for _, line := range strings.Split(b.text, "\n") {
			for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
				anchors[m[1]] = true
			}
			t := strings.TrimLeft(line, " ")
			level := len(t) - len(strings.TrimLeft(t, "#"))
			if level == 0 || level > 6 || len(t) == level || t[level] != ' ' {
				continue
			}
			slug := Slug(t[level:])
			if n := seen[slug]; n > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
	}
	return anchors
}

// Slug is GitHub's anchor for a heading's text: lower case, markup and
// punctuation other than - and _ dropped, spaces as hyphens.
func Slug(heading string) string {
	h := strings.TrimSpace(heading)
	h = strings.TrimRight(h, "#") // closing hashes of an ATX heading
	h = strings.TrimSpace(h)
	// A link in a heading contributes its text only.
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
