package testenv

import (
	"strings"
	"testing"
)

func TestParseTSOutput(t *testing.T) {
	const plan = `{"plan":["initialize","search"]}` + "\n"
	tests := []struct {
		name     string
		out      string
		wantErr  string // substring of the parse error; "" for none
		problems []string
	}{
		{name: "all passed", out: plan + `{"step":"initialize","ok":true,"detail":"toolbridge"}` + "\n" + `{"step":"search","ok":true}` + "\n" + `{"done":true,"failed":0}` + "\n"},
		{name: "a failed step", out: plan + `{"step":"initialize","ok":true}` + "\n" + `{"step":"search","ok":false,"error":"MCP error -32602"}` + "\n" + `{"done":true,"failed":1}`,
			problems: []string{`step "search" failed: MCP error -32602`}},
		{name: "driver died midway", out: plan + `{"step":"initialize","ok":true}` + "\n",
			problems: []string{`step "search" never reported`, "the driver did not finish"}},
		{name: "nothing printed", out: "", problems: []string{"the driver printed no plan", "the driver did not finish"}},
		{name: "blank lines", out: "\n" + plan + "\n" + `{"step":"initialize","ok":true}` + "\n\n" + `{"step":"search","ok":true}` + "\n" + `{"done":true}`},
		{name: "not JSON", out: plan + "Error: cannot find module\n", wantErr: "line 2"},
		{name: "step outside the plan", out: plan + `{"step":"other","ok":true}`, wantErr: `step "other" is not in the plan`},
		{name: "step twice", out: plan + `{"step":"search","ok":true}` + "\n" + `{"step":"search","ok":true}`, wantErr: "reported twice"},
		{name: "second plan", out: plan + plan, wantErr: "a second plan"},
		{name: "unknown object", out: plan + `{"hello":1}`, wantErr: "neither plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseTSOutput(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTSOutput error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(r.Problems(), "\n"), strings.Join(tt.problems, "\n"); got != want {
				t.Fatalf("Problems() =\n%s\nwant\n%s", got, want)
			}
		})
	}
}
