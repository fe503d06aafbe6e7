package o200k

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"
)

var update = flag.Bool("update", false, "rewrite o200k_base.bin from the tokenizer module's vocabulary")

// tableBits sizes the generated table: 2^18 slots for 199,998 tokens.
const tableBits = 18

// libraryTokens returns the codec's vocabulary in rank order. Its ranks are
// dense from 0 (a token's id is its rank), which the loop checks by looking
// past the last one.
func libraryTokens(tb testing.TB) []string {
	tb.Helper()
	c := codec.NewO200kBase()
	var tokens []string
	for id := uint(0); ; id++ {
		s, err := c.Decode([]uint{id})
		if err != nil {
			break
		}
		tokens = append(tokens, s)
	}
	for id := uint(len(tokens)); id < 1<<rankBits; id++ {
		if _, err := c.Decode([]uint{id}); err == nil {
			tb.Fatalf("token %d decodes after a gap at %d: ranks are not dense", id, len(tokens))
		}
	}
	return tokens
}

// buildVocabularyFile lays tokens out as vocabulary reads them.
func buildVocabularyFile(tokens []string, bits uint) []byte {
	var b bytes.Buffer
	b.WriteString(vocabMagic)
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(tokens))))
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(bits)))
	off := uint32(0)
	for _, t := range tokens {
		b.Write(binary.LittleEndian.AppendUint32(nil, off))
		off += uint32(len(t))
	}
	b.Write(binary.LittleEndian.AppendUint32(nil, off))
	slots := make([]uint32, 1<<bits)
	for r, t := range tokens {
		h := hash(t)
		i := int(h >> (64 - bits))
		for slots[i] != 0 {
			i = (i + 1) & (len(slots) - 1)
		}
		slots[i] = (uint32(h)&tagMask)<<rankBits | uint32(r+1)
	}
	for _, s := range slots {
		b.Write(binary.LittleEndian.AppendUint32(nil, s))
	}
	for _, t := range tokens {
		b.WriteString(t)
	}
	return b.Bytes()
}

// TestVocabularyFile checks that the embedded file is exactly what the
// codec's vocabulary gives, and that every token is found at its rank; with
// -update it rewrites the file instead.
func TestVocabularyFile(t *testing.T) {
	tokens := libraryTokens(t)
	want := buildVocabularyFile(tokens, tableBits)
	if *update {
		if err := os.WriteFile("o200k_base.bin", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if vocabFile != string(want) {
		t.Fatalf("o200k_base.bin differs from the tokenizer module's vocabulary (%d tokens); go test -run VocabularyFile -update rewrites it", len(tokens))
	}
	v, err := parseVocabulary(vocabFile)
	if err != nil {
		t.Fatal(err)
	}
	if v.n != len(tokens) {
		t.Fatalf("vocabulary holds %d tokens, want %d", v.n, len(tokens))
	}
	for r, tok := range tokens {
		if got, ok := v.rank(tok); !ok || int(got) != r {
			t.Fatalf("rank(%q) = %d, %v; want %d", tok, got, ok, r)
		}
	}
	for _, s := range []string{"", "\xff\xff\xff\xff\xff\xff", "notatokenatall", strings.Repeat("a", 200)} {
		if r, ok := v.rank(s); ok {
			t.Errorf("rank(%q) = %d, want no token", s, r)
		}
	}
}

func TestParseVocabularyRejectsDamage(t *testing.T) {
	tests := []struct {
		name string
		file string
	}{
		{"empty", ""},
		{"wrong magic", "xx-o200k" + vocabFile[8:]},
		{"truncated header", vocabFile[:12]},
		{"truncated table", vocabFile[:len(vocabFile)/2]},
		{"missing last byte", vocabFile[:len(vocabFile)-1]},
		{"huge count", vocabMagic + "\xff\xff\xff\x7f" + vocabFile[12:]},
		{"zero-bit table", vocabMagic + vocabFile[8:12] + "\x00\x00\x00\x00" + vocabFile[16:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseVocabulary(tt.file); err == nil {
				t.Error("parseVocabulary accepted a damaged file")
			}
		})
	}
}

// sameCount fails t unless the Encoder and the codec count text alike.
func sameCount(t *testing.T, e *Encoder, c *codec.Codec, text string) {
	t.Helper()
	want, wantErr := c.Count(text)
	got, err := e.Count(text)
	if (err != nil) != (wantErr != nil) || got != want {
		t.Fatalf("Count(%.80q) = %d, %v; codec says %d, %v", text, got, err, want, wantErr)
	}
}

func TestCountMatchesCodec(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c := codec.NewO200kBase()
	catalog, err := os.ReadFile("../../testdata/reference-servers/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"", "hello world", `{"type":"object","properties":{}}`, "it's DON'T we'LL", "  \n\n  x \t\r\n",
		"naïve ÉCOLE ĳ ǅx ʰ \u0301a 中文 ٣٤٥ 12345", "\xff\xfe\x80 broken utf-8 \xc3",
		strings.Repeat("z", 97), strings.Repeat("ab", 300), strings.Repeat(" ", 200) + "x",
		strings.Repeat("\u00e9\u0301", 80), "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZCB0ZXh0IHRoYXQgcnVucyBvbiBhbmQgb24gYW5kIG9u",
		string(catalog),
	}
	for _, line := range strings.Split(string(catalog), "\n") {
		texts = append(texts, line)
	}
	for _, text := range texts {
		sameCount(t, e, c, text)
	}
	// Long pieces of random letters take the heap merge; random runs of
	// the pattern's special characters test the pieces themselves.
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "q", "x", "Z", "é", "ß", "'", "'s", " ", "\n", "\t", "1", "22", "/", "\"", "{", "中", "\u0301", "\xff"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		sameCount(t, e, c, b.String())
	}
	for range 200 {
		var b strings.Builder
		for range 90 + rng.IntN(200) {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		sameCount(t, e, c, b.String())
	}
}

// FuzzCount compares the Encoder's count with the codec's on any text.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "hello world", `{"name":"read_file","inputSchema":{"type":"object"}}`,
		"it's \"quoted\"\n", "\xff\xfe not utf-8", strings.Repeat("xyzzy", 30), "  \r\n\t 123456 ÉCOLE"} {
		f.Add(s)
	}
	e, err := New()
	if err != nil {
		f.Fatal(err)
	}
	c := codec.NewO200kBase()
	f.Fuzz(func(t *testing.T, text string) { sameCount(t, e, c, text) })
}

// BenchmarkNew is the cost of a ready Encoder: what start-up pays.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCount counts the reference catalog's JSON, line by line.
func BenchmarkCount(b *testing.B) {
	catalog, err := os.ReadFile("../../testdata/reference-servers/catalog.json")
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(string(catalog), "\n")
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	c := codec.NewO200kBase()
	for _, bc := range []struct {
		name  string
		count func(string) (int, error)
	}{{"o200k", e.Count}, {"codec", c.Count}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(catalog)))
			for b.Loop() {
				for _, l := range lines {
					if _, err := bc.count(l); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
