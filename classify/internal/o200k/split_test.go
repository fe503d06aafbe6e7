package o200k

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/dlclark/regexp2/v2"
	"github.com/dlclark/regexp2/v2/helpers"
	// Registers the codec's generated matcher of splitPattern, which
	// regexp2.MustCompile then returns.
	_ "github.com/tiktoken-go/tokenizer/codec"
)

// splitPattern is o200k_base's pre-tokenizer, as the codec compiles it.
const splitPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// codecPieces splits text as the codec does.
func codecPieces(tb testing.TB, re *regexp2.Regexp, text string) []string {
	tb.Helper()
	var pieces []string
	m, err := re.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		pieces = append(pieces, m.String())
	}
	if err != nil {
		tb.Fatal(err)
	}
	return pieces
}

func ourPieces(tb testing.TB, s *splitter, text string) []string {
	tb.Helper()
	var pieces []string
	if err := s.split(text, func(p string) { pieces = append(pieces, p) }); err != nil {
		tb.Fatal(err)
	}
	return pieces
}

// TestSplitMatchesCodec compares the pieces, not only the counts, with
// the codec's matcher's.
func TestSplitMatchesCodec(t *testing.T) {
	re := regexp2.MustCompile(splitPattern, regexp2.None)
	catalog, err := os.ReadFile("../../testdata/reference-servers/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"", "a", "hello world", "it's DON'T we'LL 'S", "\u00a0\u0085 x\u2028y", "ǅungla ʰx \u0301",
		"\xff\xfe", "abc\xffdef", "1234567 ٣٤٥٦", "  \t\n\r\n  /x", "x/\n\n/", "<|endoftext|>", string(catalog)}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "Z", "ß", "É", "ǅ", "ʰ", "\u0301", "中", "'", "'s", "'LL", " ", "  ", "\n", "\r", "\t", "\u00a0", "\u2028", "1", "٣", "²", "/", "\"", "{", "\xff"}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	var s splitter
	for _, text := range texts {
		if want, got := codecPieces(t, re, text), ourPieces(t, &s, text); !slices.Equal(got, want) {
			t.Fatalf("pieces of %q:\n got %q\nwant %q", text, got, want)
		}
	}
	// The codec's matcher backtracks \s*[\r\n]+ to the first newline, not
	// the last as a regexp engine would: "\n \n" is two pieces, not one.
	// Counts must be the codec's, so this stays.
	if got := ourPieces(t, &s, "\n \n"); !slices.Equal(got, []string{"\n", " \n"}) {
		t.Errorf(`pieces of "\n \n" = %q, want the codec's ["\n" " \n"]`, got)
	}
}

// TestClassesMatchCodec checks each character class against the generated
// matcher's own test of it, on every rune.
func TestClassesMatchCodec(t *testing.T) {
	classes := []struct {
		name      string
		ours, gen func(rune) bool
	}{
		{"prefix", inPrefixSet, func(c rune) bool {
			return (c < 128 && helpers.IsInASCIIBitmap(c, 0xfc00ffffffffdbff, 0x78000001f8000001)) || (c >= 128 && prefixSet.CharIn(c))
		}},
		{"symbol", inSymbolSet, func(c rune) bool {
			return (c < 128 && helpers.IsInASCIIBitmap(c, 0xfc00fffeffffc1ff, 0x78000001f8000001)) || (c >= 128 && symbolSet.CharIn(c))
		}},
		{"upper", inUpperSet, func(c rune) bool { return unicode.In(c, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) }},
		{"lower", inLowerSet, func(c rune) bool { return unicode.In(c, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) }},
		{"digit", inDigitSet, func(c rune) bool { return unicode.In(c, unicode.N) }},
	}
	for _, cl := range classes {
		for c := rune(0); c <= unicode.MaxRune; c++ {
			if cl.ours(c) != cl.gen(c) {
				t.Errorf("%s set: %U is %v, the matcher says %v", cl.name, c, cl.ours(c), cl.gen(c))
			}
		}
	}
	// The sets themselves are the regexp's: spot-check them against the
	// pattern's meaning.
	for c, want := range map[rune]bool{'a': false, '1': false, '\n': false, ' ': true, '"': true, 'é': false, '\u0301': true, '٣': false} {
		if got := inPrefixSet(c); got != want {
			t.Errorf("inPrefixSet(%q) = %v, want %v", c, got, want)
		}
	}
	for c, want := range map[rune]bool{'a': false, '1': false, ' ': false, '\u00a0': false, '"': true, '/': true, '\u0301': true} {
		if got := inSymbolSet(c); got != want {
			t.Errorf("inSymbolSet(%q) = %v, want %v", c, got, want)
		}
	}
}

func TestRunnerStackGrows(t *testing.T) {
	var r runner
	for i := range 100 {
		r.StackPush(i)
	}
	if r.StackDepth() != 100 {
		t.Fatalf("depth %d after 100 pushes", r.StackDepth())
	}
	for i := 99; i >= 0; i-- {
		if got := r.StackPop(); got != i {
			t.Fatalf("popped %d, want %d", got, i)
		}
	}
}
