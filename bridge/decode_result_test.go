package bridge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// decodeResultCases are tools/call results of every shape: the plain text
// ones decodeResult reads itself, and the rest it hands to mcp-go.
var decodeResultCases = []string{
	`{"content":[{"type":"text","text":"up:hello"}],"structuredContent":{"server":"up","text":"hello"}}`,
	`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b\n\u00e9"}]}`,
	`{"content":[{"type":"text","text":"boom"}],"isError":true}`,
	`{"content":[],"structuredContent":[1,2,3]}`,
	`{"content":null,"structuredContent":null}`,
	`{"structuredContent":42}`,
	`{}`,
	`{"content":[{"type":"text"}]}`,
	`{"content":[{"type":"text","text":null}]}`,
	`{"content":[{"type":"text","text":"x","extra":1}],"unknown":{"a":1}}`,
	`{"Content":[{"Type":"text","Text":"case"}],"IsError":true}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
	`{"content":[{"type":"text","text":"x","annotations":null}]}`,
	`{"content":[{"type":"text","text":"x","_meta":{"k":"v"}}]}`,
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"hi"}}]}`,
	`{"_meta":{"k":"v"},"content":[{"type":"text","text":"x"}]}`,
	`{"resultType":"complete","content":[{"type":"text","text":"x"}]}`,
	`{"requestState":"abc","content":[{"type":"text","text":"x"}]}`,
	`{"content":[{"type":5,"text":"x"}]}`,
	`{"content":{"type":"text"}}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":[{"type":"text","text":"x"}]`,
	`[]`,
	`null`,
	// decodePlainText's edges: spacing, member order, escapes, repeats.
	" { \"content\" : [ { \"text\" : \"x\\ny\\u00e9\" , \"type\" : \"text\" } ] , \"isError\" : false } ",
	`{"content":[{"type":"text","text":"a"}],"content":[]}`,
	`{"content":[{"type":"text","text":"x","type":"text"}]}`,
	`{"isError":true,"isError":false,"content":[]}`,
	`{"structuredContent":{"a":[1,{"b":"}"}]},"content":[{"type":"text","text":"{\"a\":1}"}]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf-8\"}]}",
	`{"content":[{"type":"text","text":""},{"type":"text","text":"2"}],"isError":null}`,
}

// TestDecodeResultMatchesMCPGo pins decodeResult to what json.Unmarshal
// into an mcp.CallToolResult gives, for every shape of result: the fast
// path for plain text blocks may not change what reaches the client.
func TestDecodeResultMatchesMCPGo(t *testing.T) {
	for _, raw := range decodeResultCases {
		t.Run(raw, func(t *testing.T) { checkDecodeResult(t, []byte(raw)) })
	}
}

func checkDecodeResult(t *testing.T, raw []byte) {
	t.Helper()
	var want mcp.CallToolResult
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodeResult(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeResult(%s) error %v, mcp-go's %v", raw, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("decodeResult(%s)\n got %#v\nwant %#v", raw, got, &want)
	}
	gotJSON, err1 := json.Marshal(got)
	wantJSON, err2 := json.Marshal(&want)
	if string(gotJSON) != string(wantJSON) || (err1 == nil) != (err2 == nil) {
		t.Fatalf("decodeResult(%s) marshals to %s (%v), mcp-go's to %s (%v)", raw, gotJSON, err1, wantJSON, err2)
	}
}

func FuzzDecodeResult(f *testing.F) {
	for _, raw := range decodeResultCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodeResult(t, raw) })
}
