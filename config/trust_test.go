package config

import (
	"strings"
	"testing"
)

// The trust key is an object, with "trust: MODE" as its short form.
func TestTrustSpellings(t *testing.T) {
	tests := []struct {
		file, content string
		env           []string
		want          Trust
		wantErr       string
	}{
		{"t.yaml", "mode: auto\n", nil, Trust{Mode: TrustPin, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: warn\n", nil, Trust{Mode: TrustWarn, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: OFF\n", nil, Trust{Mode: TrustOff, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: false\n", nil, Trust{Mode: TrustOff, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: true\n", nil, Trust{Mode: TrustPin, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: {mode: Pin, new_servers: Quarantine}\n", nil, Trust{Mode: TrustPin, NewServers: NewServersQuarantine}, ""},
		{"t.yaml", "trust: {block_suspicious: yes}\n", nil, Trust{Mode: TrustPin, NewServers: NewServersTrust, BlockSuspicious: true}, ""},
		{"t.json", `{"trust": "warn"}`, nil, Trust{Mode: TrustWarn, NewServers: NewServersTrust}, ""},
		{"t.toml", "trust = \"off\"\n", nil, Trust{Mode: TrustOff, NewServers: NewServersTrust}, ""},
		{"t.yaml", "trust: warn\n", []string{"TOOLBRIDGE_TRUST__MODE=off", "TOOLBRIDGE_TRUST__BLOCK_SUSPICIOUS=true"}, Trust{Mode: TrustOff, NewServers: NewServersTrust, BlockSuspicious: true}, ""},
		{"t.yaml", "trust: 3\n", nil, Trust{}, "trust: expected an object, got"},
		{"t.yaml", "trust: paranoid\n", nil, Trust{}, `trust.mode: invalid value "paranoid": want pin, warn or off`},
		{"t.yaml", "trust: {mode: pin, quarantine: true}\n", nil, Trust{}, "trust.quarantine: unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.content+strings.Join(tc.env, ","), func(t *testing.T) {
			got, err := Load(LoadOptions{Path: writeFile(t, tc.file, tc.content), Environ: tc.env})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Trust != tc.want {
				t.Errorf("trust = %+v, want %+v", got.Trust, tc.want)
			}
		})
	}
}

func TestPolicyAndDisabledValidate(t *testing.T) {
	tests := []struct {
		content string
		wantErr string
	}{
		{"policy: {destructive: DENY}\n", ""},
		{"policy: {destructive: confirm}\n", ""},
		{"policy: {destructive: prompt}\n", `policy.destructive: invalid value "prompt": want allow, confirm or deny`},
		{"tools: [{match: \"gh::delete_*\", class: Disabled}]\n", ""},
		{"mcpServers: {gh: {command: x, allow_tools: [\"get_*\"], deny_tools: [\"get_secret\"]}}\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.content, func(t *testing.T) {
			_, err := Load(LoadOptions{Path: writeFile(t, "c.yaml", tc.content)})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
