package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRedisKeys: redis.url takes redis://, rediss:// and unix:// URLs, and
// an error about one never quotes its password back.
func TestRedisKeys(t *testing.T) {
	const pw = "s3cretRedisPw"
	tests := []struct {
		name, content string
		want          []string
	}{
		{"unset", "mode: on\n", nil},
		{"plain", "redis: {url: \"redis://127.0.0.1:6379\"}\n", nil},
		{"password and db", "redis: {url: \"redis://:" + pw + "@redis:6379/2\"}\n", nil},
		{"tls", "redis: {url: \"rediss://user:" + pw + "@redis.example:6380\"}\n", nil},
		{"socket", "redis: {url: \"unix:///run/redis.sock\"}\n", nil},
		{"prefix", "redis: {key_prefix: \"team-a:\"}\n", nil},
		{"empty prefix", "redis: {key_prefix: \"\"}\n", []string{`: redis.key_prefix: must not be empty: every replica's keys would mix with whatever else the Redis holds (the default is "toolbridge:")`}},
		{"scheme", "redis: {url: \"http://:" + pw + "@redis:6379\"}\n", []string{`: redis.url: scheme "http" is not redis, rediss or unix`}},
		{"no host", "redis: {url: \"redis:///0\"}\n", []string{`: redis.url: redis:///**** has no host: want redis://host:6379`}},
		{"bad db", "redis: {url: \"redis://:" + pw + "@redis:6379/zero\"}\n", []string{`: redis.url: redis://****@redis:6379/****: the path must be a database number, such as /0`}},
		{"not a url", "redis: {url: \"redis://:" + pw + "@%zz\"}\n", []string{`: redis.url: is not a URL (want redis://host:6379, rediss://host:6379 or unix:///path)`}},
		{"socket without path", "redis: {url: \"unix://\"}\n", []string{`: redis.url: unix:// needs a socket path, such as unix:///run/redis/redis.sock`}},
		{"unknown key", "redis: {ulr: \"redis://x:1\"}\n", []string{`: redis.ulr: unknown key (did you mean url?)`}},
		{"token key env", "redis: {token_key_env: GATEWAY_TOKEN_KEY}\n", nil},
		{"token key env not a name", "redis: {token_key_env: \"MY-KEY\"}\n", []string{`: redis.token_key_env: "MY-KEY" is not an environment variable name (want letters, digits and _, such as TOOLBRIDGE_TOKEN_KEY)`}},
		{"token key env empty", "redis: {token_key_env: \"\"}\n", []string{`: redis.token_key_env: "" is not an environment variable name (want letters, digits and _, such as TOOLBRIDGE_TOKEN_KEY)`}},
		{"token key env a setting", "redis: {token_key_env: TOOLBRIDGE_KEY}\n", []string{`: redis.token_key_env: "TOOLBRIDGE_KEY" starts with TOOLBRIDGE_, which names settings: use TOOLBRIDGE_TOKEN_KEY or a name of your own outside it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", tt.content)
			_, err := Load(LoadOptions{Path: path})
			var want []string
			for _, w := range tt.want {
				want = append(want, path+w)
			}
			got := errLines(err)
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if err != nil && strings.Contains(err.Error(), pw) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestRedisURLRedacted: config check and /readyz show the config through
// Redacted, which must mask the Redis password.
func TestRedisURLRedacted(t *testing.T) {
	c := Default()
	c.Redis.URL = "redis://default:s3cretRedisPw@redis:6379/0"
	for _, full := range []bool{false, true} {
		c.ShowFullURLs = full
		if got := c.Redacted().Redis.URL; strings.Contains(got, "s3cretRedisPw") || !strings.Contains(got, "redis:6379") {
			t.Errorf("ShowFullURLs=%v: Redacted().Redis.URL = %q", full, got)
		}
	}
}

// TestTokenKeyVariableIsNotASetting: TOOLBRIDGE_TOKEN_KEY, the default
// redis.token_key_env, is not refused as an unknown TOOLBRIDGE_ setting,
// and its value is nowhere in the config.
func TestTokenKeyVariableIsNotASetting(t *testing.T) {
	const key = "c2VjcmV0LXRva2VuLWtleS0zMi1ieXRlcy1sb25nISE="
	cfg, err := Load(LoadOptions{Environ: []string{"TOOLBRIDGE_TOKEN_KEY=" + key}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.TokenKeyEnv != DefaultTokenKeyEnv {
		t.Errorf("token_key_env = %q, want %q", cfg.Redis.TokenKeyEnv, DefaultTokenKeyEnv)
	}
	if b, _ := json.Marshal(cfg.Redacted()); strings.Contains(string(b), key) {
		t.Error("the key reached the config")
	}
}
