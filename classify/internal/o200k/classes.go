package o200k

import (
	"unicode"

	"github.com/dlclark/regexp2/v2/helpers"
	"github.com/dlclark/regexp2/v2/syntax"
)

// The character classes of splitPattern, as the codec's generated matcher
// tests them, but with the ASCII answer first: most of a tool's JSON is
// ASCII, and unicode.In tries every table it is given before it says no.
// TestClassesMatchCodec compares each with the matcher's own test on every
// rune.

// prefixSet and symbolSet are the generated matcher's sets for runes
// from 128 up: [^\n\r\p{L}\p{N}] and [^\s\p{L}\p{N}].
var (
	prefixSet = syntax.NewCharSetRuntime("\x01\x02\x00\x00\x00\x02\x00\x00\x00\n\n\r\r\x01L\x01N")
	symbolSet = syntax.NewCharSetRuntime("\x01\x00\x00\x00\x00\x03\x00\x00\x00\x01 \x01L\x01N")
)

// inPrefixSet tests [^\r\n\p{L}\p{N}], the optional rune before a word.
func inPrefixSet(r rune) bool {
	if r < 128 {
		return helpers.IsInASCIIBitmap(r, 0xfc00ffffffffdbff, 0x78000001f8000001)
	}
	return prefixSet.CharIn(r)
}

// inSymbolSet tests [^\s\p{L}\p{N}], the runes of a run of punctuation.
func inSymbolSet(r rune) bool {
	if r < 128 {
		return helpers.IsInASCIIBitmap(r, 0xfc00fffeffffc1ff, 0x78000001f8000001)
	}
	return symbolSet.CharIn(r)
}

// inUpperSet tests [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func inUpperSet(r rune) bool {
	if r < 128 {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// inLowerSet tests [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func inLowerSet(r rune) bool {
	if r < 128 {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// inDigitSet tests \p{N}.
func inDigitSet(r rune) bool {
	if r < 128 {
		return '0' <= r && r <= '9'
	}
	return unicode.In(r, unicode.N)
}
