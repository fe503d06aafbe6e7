package classify

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

func countMemo(t *testing.T, root string) *CountMemo {
	t.Helper()
	c, err := NewCounter(config.TokenizerO200k)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := statefile.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return NewCountMemo(c, dir)
}

func memoTool() mcp.Tool {
	return mcp.Tool{Name: "read_file", Description: "Read a file from disk and return its text.", RawInputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
}

// packedCount is one record of a count memo file.
func packedCount(tool mcp.Tool, n uint32) []byte {
	k := sha256.Sum256(toolText(tool))
	return binary.BigEndian.AppendUint32(k[:], n)
}

func countMemoFileOf(counts []byte, tokenizer string) []byte {
	sum := sha256.Sum256(counts)
	b, _ := json.Marshal(countMemoDoc{Version: CountMemoFormatVersion, Tokenizer: tokenizer, Sum: hex.EncodeToString(sum[:]), Counts: counts})
	return b
}

// TestCountMemoOutlivesTheProcess: the counts a run made are the next
// run's, read from the state directory instead of tokenized again.
func TestCountMemoOutlivesTheProcess(t *testing.T) {
	root := t.TempDir()
	m := countMemo(t, root)
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	want := m.Count(memoTool())
	if exact := m.Counter.Count(memoTool()); want != exact || want == 0 {
		t.Fatalf("memo count %d, tokenizer's %d", want, exact)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "memo", "tokens.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("count memo file: %v, %v; want mode 0600", fi, err)
	}
	next := countMemo(t, root)
	if err := next.Load(); err != nil {
		t.Fatal(err)
	}
	if len(next.old) != 1 {
		t.Fatalf("the next run read %d counts, want 1", len(next.old))
	}
	if got := next.Count(memoTool()); got != want {
		t.Errorf("next run's count %d, want %d", got, want)
	}
	// Read, not recounted: a count planted in the file is what Count gives.
	if err := os.WriteFile(path, countMemoFileOf(packedCount(memoTool(), 777), config.TokenizerO200k), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := countMemo(t, root)
	if err := planted.Load(); err != nil {
		t.Fatal(err)
	}
	if got := planted.Count(memoTool()); got != 777 {
		t.Errorf("count %d, want the file's 777: the memo did not spare the tokenizer", got)
	}
	if got := CountText(planted, "hello world"); got != 2 {
		t.Errorf("CountText through a memo = %d, want o200k_base's 2", got)
	}
	// Another tokenizer's counts are not used, and are no error.
	if err := os.WriteFile(path, countMemoFileOf(packedCount(memoTool(), 777), config.TokenizerEstimate), 0o600); err != nil {
		t.Fatal(err)
	}
	other := countMemo(t, root)
	if err := other.Load(); err != nil || other.Count(memoTool()) != want {
		t.Errorf("another tokenizer's memo: %v, count %d; want no error and %d", err, other.Count(memoTool()), want)
	}
}

// TestBrokenCountMemoIsIgnoredAndReplaced: a count memo that is not whole
// and right is an error naming it; counting goes on without it and the
// next save writes a good one.
func TestBrokenCountMemoIsIgnoredAndReplaced(t *testing.T) {
	good := packedCount(memoTool(), 20)
	goodFile := string(countMemoFileOf(good, config.TokenizerO200k))
	cases := []struct{ name, content, want string }{
		{"empty", "", "EOF"},
		{"not json", "{not json", "invalid character"},
		{"truncated", goodFile[:30], "unexpected EOF"},
		{"trailing data", goodFile + "[]", "trailing data"},
		{"unknown field", strings.Replace(goodFile, `"version"`, `"x":1,"version"`, 1), "unknown field"},
		{"other format", strings.Replace(goodFile, `"version":1`, `"version":2`, 1), "format version 2"},
		{"edited counts", string(countMemoFileOf(good, config.TokenizerO200k)[:len(goodFile)-3]) + `A"}`, "checksum"},
		{"partial record", string(countMemoFileOf(good[:len(good)-1], config.TokenizerO200k)), "whole number"},
		{"huge count", string(countMemoFileOf(packedCount(memoTool(), maxCount+1), config.TokenizerO200k)), "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "memo", "tokens.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			m := countMemo(t, root)
			err := m.Load()
			var corrupt *statefile.CorruptError
			if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %v, want a corrupt-file error naming %s and saying %q", err, path, c.want)
			}
			if got, exact := m.Count(memoTool()), m.Counter.Count(memoTool()); got != exact {
				t.Fatalf("count after a broken memo %d, want the tokenizer's %d", got, exact)
			}
			if err := m.Save(); err != nil {
				t.Fatal(err)
			}
			next := countMemo(t, root)
			if err := next.Load(); err != nil || len(next.old) != 1 {
				t.Errorf("the memo written after a broken one: %v, %d counts; want 1", err, len(next.old))
			}
		})
	}
}

// FuzzDecodeCountMemo: no input panics, and what decodes is in bounds.
func FuzzDecodeCountMemo(f *testing.F) {
	f.Add(countMemoFileOf(packedCount(memoTool(), 20), config.TokenizerO200k))
	f.Add([]byte(`{"version":1,"tokenizer":"o200k_base","sum":"","counts":""}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		counts, _, err := decodeCountMemo(b, config.TokenizerO200k)
		if err != nil {
			return
		}
		if len(counts) > maxCountMemo {
			t.Fatalf("%d counts decoded, more than %d", len(counts), maxCountMemo)
		}
		for _, n := range counts {
			if n < 0 || n > maxCount {
				t.Fatalf("count %d out of bounds", n)
			}
		}
	})
}

// TestCountMemoKeepsCountsNotUsed: a run that counts some tools keeps the
// file's counts of the others (another config on the same state
// directory), so the next run of that config finds them.
func TestCountMemoKeepsCountsNotUsed(t *testing.T) {
	root := t.TempDir()
	other := memoTool()
	other.Name = "write_file"
	m := countMemo(t, root)
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	m.Count(memoTool())
	m.Count(other)
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	next := countMemo(t, root)
	if err := next.Load(); err != nil {
		t.Fatal(err)
	}
	next.Count(memoTool())
	if err := next.Save(); err != nil {
		t.Fatal(err)
	}
	last := countMemo(t, root)
	if err := last.Load(); err != nil {
		t.Fatal(err)
	}
	if len(last.old) != 2 {
		t.Errorf("after a run that counted one of two tools the file has %d counts, want both", len(last.old))
	}
}
