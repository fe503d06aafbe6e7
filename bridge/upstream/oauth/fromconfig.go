package oauth

import (
	"fmt"
	"os"

	"github.com/toolbridge/toolbridge/config"
)

// ConfigFor builds the OAuth settings of the configured server name from
// its auth block (which may be empty: OAuth then applies when the server
// answers 401), reading private_key_file if one is named.
func ConfigFor(name string, s config.Server, store Store) (Config, error) {
	if s.URL == "" {
		return Config{}, fmt.Errorf("%s is not a remote server (no url): only remote servers log in", name)
	}
	a := s.Auth
	c := Config{
		Server: name, URL: s.URL, Store: store,
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, ClientMetadataURL: a.ClientMetadataURL,
		Scopes: a.Scopes, RedirectPort: a.RedirectPort,
		PrivateKey: a.PrivateKey, SigningAlg: a.SigningAlg,
		Grant: GrantAuthorizationCode,
	}
	if s.AuthType() == config.AuthClientCredentials || a.PrivateKey != "" || a.PrivateKeyFile != "" {
		c.Grant = GrantClientCredentials
	}
	if a.PrivateKeyFile != "" {
		b, err := os.ReadFile(a.PrivateKeyFile)
		if err != nil {
			return Config{}, fmt.Errorf("reading the private key of %s: %w", name, err)
		}
		c.PrivateKey = string(b)
	}
	return c, nil
}
