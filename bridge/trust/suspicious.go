package trust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// Flag says why a tool's text looks like an instruction to the model
// rather than a description for it.
type Flag struct {
	// Rule is the rule's name, one of the Rule* constants.
	Rule string `json:"rule"`
	// Where is the field the text sits in: "description", "title",
	// "annotations.title" or a path into a schema such as
	// "inputSchema.properties.path.description".
	Where string `json:"where"`
	// Why explains the flag with the text that raised it.
	Why string `json:"why"`
}

// String renders the flag on one line.
func (f Flag) String() string { return f.Where + ": " + f.Why }

// The suspicious-description rules. Each catches a pattern seen in
// published tool-poisoning attacks; none needs a network or a model. The
// rule set is kept small on purpose: a flag a user learns to ignore
// protects nobody, and the reference servers' 99 tools raise none.
const (
	// RuleHiddenTag: a tag that addresses the model, such as <IMPORTANT>,
	// <SYSTEM> or <instructions>, the markup of the first published
	// tool-poisoning attack.
	RuleHiddenTag = "hidden-tag"
	// RuleOverride: text that tries to override the model's instructions or
	// hide the call from the user ("ignore previous instructions", "do not
	// tell the user").
	RuleOverride = "override"
	// RuleSecretFile: a reference to private keys, SSH or cloud credential
	// files, or a request to read or send keys or passwords.
	RuleSecretFile = "secret-file"
	// RuleInvisible: invisible or bidirectional-control Unicode (zero-width
	// characters, bidi overrides, tag characters), which hides text from a
	// person reading the description but not from the model.
	RuleInvisible = "invisible-unicode"
	// RuleLong: a description longer than LongDescription characters;
	// instructions are often buried in bulk.
	RuleLong = "long-description"
	// RuleMixedScript: a word that mixes letters of several scripts, such as
	// Latin with Cyrillic look-alikes ("Іgnоrе" with a Cyrillic І and о),
	// which reads as one thing to a person and slips past every rule
	// written for the other (UTS #39's mixed-script detection).
	RuleMixedScript = "mixed-script"
	// RuleShadowsAlias: the tool's name is an alias form ("mcp__h__echo",
	// "h__echo") of another tool's id. The gateway sets it, not Check: it
	// depends on the other servers. Calls by that name go to the aliased
	// server; the flagged tool answers only to its own id.
	RuleShadowsAlias = "shadows-alias"
)

// LongDescription is the length, in characters, above which a description
// is flagged. The longest description among the reference servers is 2,781
// characters (sequential-thinking).
const LongDescription = 4000

var (
	hiddenTag = regexp.MustCompile(`(?i)<\s*/?\s*(important|system|system[-_ ]?prompt|instructions?|admin|secret|hidden|assistant|note[-_ ]to[-_ ](?:the[-_ ])?(?:ai|model|assistant|llm))\s*>` +
		`|\[/?\s*(?:INST|SYSTEM)\s*\]|<\|im_start\|>`)
	override = regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|preceding|other|system)\s+(?:instructions?|prompts?|rules|directions)` +
		`|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal|show|notify)\s+(?:this\s+|it\s+|anything\s+)?(?:to\s+)?(?:the\s+)?user` +
		`|\bwithout\s+(?:telling|informing|notifying|asking)\s+the\s+user` +
		`|\b(?:the\s+)?user\s+(?:must|should)\s+not\s+(?:know|see|be\s+told)`)
	secretFile = regexp.MustCompile(`(?i)~/\.ssh\b|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pgpass\b|\.git-credentials|\.docker/config\.json|\.kube/config|/etc/shadow\b|\.gnupg\b` +
		`|\b(?:read|cat|open|send|upload|exfiltrate|leak|forward)\b(?:[^.\n]|\.\S){0,40}?\b(?:private\s+keys?|ssh\s+keys?|credentials?\s+files?|mcp\.json|claude_desktop_config\.json)` +
		`|\b(?:send|upload|exfiltrate|leak|forward|post)\b(?:[^.\n]|\.\S){0,40}?\b(?:api\s+keys?|secret\s+keys?|passwords?|access\s+tokens?|credentials)\b`)
)

// Check runs the rules over every text of d the model reads: title,
// description, annotation title and each string and key of the schemas.
// Flags come in field order, at most one per rule and field.
func Check(d Definition) []Flag {
	var flags []Flag
	add := func(where, text string, long bool) {
		// A schema key may hold the very characters a flag reports: the
		// place is shown with them spelled out, never hidden in it.
		flags = append(flags, checkText(spellInvisible(where), text, long)...)
	}
	// The name is what a person approves a call by: zero-width, bidi and
	// mixed-script characters there make one tool pass for another.
	add(FieldName, d.Name, false)
	add(FieldTitle, d.Title, false)
	add(FieldDescription, d.Description, true)
	add("annotations.title", d.Annotations.Title, false)
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{FieldInputSchema, d.InputSchema}, {FieldOutputSchema, d.OutputSchema}} {
		if len(f.raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(f.raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			// Unparsable schema: scan it as text so nothing escapes.
			add(f.name, string(f.raw), false)
			continue
		}
		walkStrings(f.name, v, add)
	}
	return flags
}

// walkStrings calls fn for each string and object key under v, with its
// path, in a stable order.
func walkStrings(path string, v any, fn func(where, text string, long bool)) {
	switch x := v.(type) {
	case string:
		fn(path, x, false)
	case []any:
		for i, e := range x {
			walkStrings(path+"["+strconv.Itoa(i)+"]", e, fn)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "." + k
			fn(p, k, false)
			walkStrings(p, x[k], fn)
		}
	}
}

// checkText applies each rule to one text.
func checkText(where, s string, long bool) []Flag {
	if s == "" {
		return nil
	}
	var out []Flag
	// Each regexp runs only on text holding one of its literal parts: most
	// schema texts are words like "string" or "path", and the regexps would
	// otherwise cost most of a 10,000-tool catalog's build.
	// Non-ASCII text may spell a literal with other letters that (?i)
	// folds the same (ſ for s, K for k): it always gets the regexps.
	ascii := isASCII(s)
	if !ascii || strings.ContainsAny(s, "<[") {
		if m := hiddenTag.FindString(s); m != "" {
			out = append(out, Flag{RuleHiddenTag, where, fmt.Sprintf("contains the tag %s, which addresses the model rather than describing the tool", quote(m))})
		}
	}
	if !ascii || containsAnyFold(s, overrideWords) {
		if m := override.FindString(s); m != "" {
			out = append(out, Flag{RuleOverride, where, fmt.Sprintf("says %s, which tries to override the model's instructions or hide the call from the user", quote(m))})
		}
	}
	if !ascii || containsAnyFold(s, secretWords) {
		if m := secretFile.FindString(s); m != "" {
			out = append(out, Flag{RuleSecretFile, where, fmt.Sprintf("mentions %s: a tool description has no reason to ask for keys or credential files", quote(m))})
		}
	}
	if why := invisible(s); why != "" {
		out = append(out, Flag{RuleInvisible, where, why})
	}
	if !ascii {
		if word, scripts := mixedScript(s); word != "" {
			out = append(out, Flag{RuleMixedScript, where, fmt.Sprintf("has the word %s, which mixes %s letters: look-alike letters of another script (homoglyphs) read as one word to a person and slip past rules written for the other", quote(word), strings.Join(scripts, " and "))})
		}
		if hidden := tagText(s); hidden != "" {
			// Tag characters spell ASCII the model may read but a person
			// never sees: the rules run on that text too.
			for _, f := range checkText(where, hidden, false) {
				if !slices.ContainsFunc(out, func(o Flag) bool { return o.Rule == f.Rule }) {
					f.Why = "in text hidden in Unicode tag characters, " + f.Why
					out = append(out, f)
				}
			}
		}
	}
	if n := utf8.RuneCountInString(s); long && n > LongDescription {
		out = append(out, Flag{RuleLong, where, fmt.Sprintf("is %d characters long (over %d), room to bury instructions", n, LongDescription)})
	}
	return out
}

// Literal parts of the regexps, lower case: every match of override holds
// one of overrideWords, every match of secretFile one of secretWords.
var (
	overrideWords = []string{"ignore", "disregard", "forget", "override", "user"}
	secretWords   = []string{"ssh", "id_", ".aws", "netrc", "npmrc", "pgpass", "credential", ".docker", ".kube", "/etc/shadow", "gnupg", "key", "mcp.json", "claude_desktop_config", "password", "token"}
)

// containsAnyFold reports whether s holds one of words (lower-case ASCII)
// in any case, without allocating.
func containsAnyFold(s string, words []string) bool {
	for _, w := range words {
		for i := 0; i+len(w) <= len(s); i++ {
			if asciiEqualFold(s[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiEqualFold(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// invisible describes the invisible or bidi characters in s, or "".
func invisible(s string) string {
	var found []string
	count := 0
	for i, r := range s {
		if !isInvisible(r) {
			continue
		}
		count++
		if len(found) < 3 {
			name := runenames.Name(r)
			if name == "" {
				name = "unnamed"
			}
			found = append(found, fmt.Sprintf("U+%04X %s at byte %d", r, name, i))
		}
	}
	if count == 0 {
		return ""
	}
	more := ""
	if count > len(found) {
		more = fmt.Sprintf(" and %d more", count-len(found))
	}
	return fmt.Sprintf("contains invisible or bidi-control characters (%s%s) that hide text from a person but not from the model", strings.Join(found, ", "), more)
}

// isInvisible reports format characters (Unicode category Cf: zero-width
// spaces and joiners, bidi embeddings, overrides and isolates, the BOM,
// tag characters) and the bidi marks. Soft hyphen is the one Cf character
// left out: word processors insert it and it hides nothing.
func isInvisible(r rune) bool {
	if r == '\u00AD' {
		return false
	}
	return unicode.Is(unicode.Cf, r) || (r >= 0xE0000 && r <= 0xE007F)
}

// quote shows matched text, shortened, with control characters escaped.
func quote(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		r := []rune(s)
		s = string(r[:60]) + "…"
	}
	return strconv.Quote(s)
}

// StripInvisible removes from s the characters invisible names and
// descriptions hide text with (see isInvisible): what the model gets
// should be what a person reviewing the tool can see.
func StripInvisible(s string) string {
	if isASCII(s) || strings.IndexFunc(s, isInvisible) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isInvisible(r) {
			return -1
		}
		return r
	}, s)
}

// spellInvisible writes each invisible character of s as <U+XXXX>.
func spellInvisible(s string) string {
	if !HasInvisible(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isInvisible(r) {
			fmt.Fprintf(&b, "<U+%04X>", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// IsInvisible reports whether StripInvisible removes r.
func IsInvisible(r rune) bool { return isInvisible(r) }

// HasInvisible reports whether s holds a character StripInvisible removes.
func HasInvisible(s string) bool {
	return !isASCII(s) && strings.IndexFunc(s, isInvisible) >= 0
}

// tagText returns the ASCII that Unicode tag characters (U+E0020 to
// U+E007E) in s spell, or "".
func tagText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteRune(r - 0xE0000)
		}
	}
	return b.String()
}

// mixedScript returns the first word of s whose letters belong to more
// than one script, with those scripts (sorted), or "" when there is none.
// A word is a run of letters, marks and digits. Common and Inherited
// characters (digits, punctuation, combining marks) belong to every
// script. As UTS #39's "highly restrictive" level allows, Latin mixed
// with the scripts of Chinese, Japanese or Korean writing is not mixing.
func mixedScript(s string) (string, []string) {
	start := -1
	var scripts []string
	end := func(i int) (string, []string) {
		word := s[start:i]
		start = -1
		if len(scripts) > 1 && !allowedMix(scripts) {
			slices.Sort(scripts)
			return word, scripts
		}
		scripts = scripts[:0]
		return "", nil
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsMark(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				if w, sc := end(i); w != "" {
					return w, sc
				}
			}
			continue
		}
		if start < 0 {
			start = i
		}
		if sc := scriptOf(r); sc != "" && !slices.Contains(scripts, sc) {
			scripts = append(scripts, sc)
		}
	}
	if start >= 0 {
		return end(len(s))
	}
	return "", nil
}

// allowedMix reports the script sets UTS #39's highly restrictive level
// accepts in one identifier: Latin with Han and Hiragana/Katakana
// (Japanese), with Han and Bopomofo (Chinese), or with Han and Hangul
// (Korean).
func allowedMix(scripts []string) bool {
	for _, set := range [][]string{
		{"Latin", "Han", "Hiragana", "Katakana"},
		{"Latin", "Han", "Bopomofo"},
		{"Latin", "Han", "Hangul"},
	} {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(set, s) }) {
			return true
		}
	}
	return false
}

// commonScripts are tried first: the scripts look-alike letters come from,
// and those of most text. unicode.Scripts answers the rest.
var commonScripts = []string{"Latin", "Cyrillic", "Greek", "Armenian", "Cherokee", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew", "Devanagari"}

// scriptOf is r's script name from the standard library's Unicode tables
// (golang.org/x/text adds no script lookup of its own), or "" for Common
// and Inherited characters, which go with any script.
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	if unicode.Is(unicode.Common, r) || unicode.Is(unicode.Inherited, r) {
		return ""
	}
	for _, name := range commonScripts {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	for _, name := range scriptNames {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	return "Unknown"
}

// scriptNames are unicode.Scripts' keys, sorted, so a lookup is
// deterministic.
var scriptNames = func() []string {
	names := make([]string, 0, len(unicode.Scripts))
	for name := range unicode.Scripts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}()
