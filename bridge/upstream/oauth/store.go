package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/zalando/go-keyring"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// Record is everything toolbridge keeps about one server's authorization:
// the token and what it needs to refresh or revoke it without discovering
// again. It is secret as a whole.
type Record struct {
	// Server is the server's name in the config; URL the MCP endpoint the
	// token was got for and Resource the RFC 8707 resource indicator.
	Server   string `json:"server"`
	URL      string `json:"url"`
	Resource string `json:"resource,omitempty"`
	// Grant is authorization_code or client_credentials.
	Grant string `json:"grant"`

	Issuer             string `json:"issuer,omitempty"`
	TokenEndpoint      string `json:"token_endpoint"`
	RevocationEndpoint string `json:"revocation_endpoint,omitempty"`

	// ClientID, ClientSecret and AuthMethod identify the client at the
	// token endpoint: registered dynamically, a client ID metadata
	// document URL, or the configured ones.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"token_endpoint_auth_method,omitempty"`

	// Scopes are the scopes asked for.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the current token; ExpiresAt is absolute.
	Token transport.Token `json:"token"`
	// StepUpScopes are scopes a 403 insufficient_scope asked for while no
	// login could be run: the next login asks for them too.
	StepUpScopes []string `json:"step_up_scopes,omitempty"`
	// NeedsLogin, when not empty, says why the token can no longer be used
	// (a refresh failed): only a new login clears it.
	NeedsLogin string    `json:"needs_login,omitempty"`
	Updated    time.Time `json:"updated"`
}

// scrub masks in text (a reason to show or store) every secret r holds.
func (r *Record) scrub(text string) string {
	return maskSecrets(text, r.Token.AccessToken, r.Token.RefreshToken, r.ClientSecret)
}

// ErrNotFound says the store holds no record for a server.
var ErrNotFound = errors.New("no stored authorization")

// Store keeps Records by server name. Implementations are safe for
// concurrent use, and several processes may share one.
type Store interface {
	// Load returns the server's record, or ErrNotFound.
	Load(ctx context.Context, server string) (*Record, error)
	// Save replaces the server's record.
	Save(ctx context.Context, server string, r *Record) error
	// Delete removes the server's record; a missing one is not an error.
	Delete(ctx context.Context, server string) error
	// String says where records live, for messages (never a secret).
	String() string
}

// Locker is a Store that can hold a server's record against other
// processes while a single-use refresh token is spent.
type Locker interface {
	Lock(ctx context.Context, server string) (unlock func(), err error)
}

// FileStore keeps records as 0600 JSON files under the state directory,
// one file per server: oauth/NAME.json.
type FileStore struct {
	dir statefile.Dir
}

// NewFileStore returns the file store in the state directory stateDir.
func NewFileStore(stateDir string) (*FileStore, error) {
	d, err := statefile.Open(stateDir)
	if err != nil {
		return nil, fmt.Errorf("opening the token store: %w", err)
	}
	return &FileStore{dir: d}, nil
}

func fileName(server string) string { return "oauth/" + server + ".json" }

// Load implements Store.
func (s *FileStore) Load(ctx context.Context, server string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var r Record
	found, err := s.dir.ReadJSON(fileName(server), &r)
	if err != nil {
		return nil, fmt.Errorf("loading the token of %s: %w", server, err)
	}
	if !found {
		return nil, ErrNotFound
	}
	return &r, nil
}

// Save implements Store.
func (s *FileStore) Save(ctx context.Context, server string, r *Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.WriteJSON(fileName(server), r); err != nil {
		return fmt.Errorf("saving the token of %s: %w", server, err)
	}
	return nil
}

// Delete implements Store.
func (s *FileStore) Delete(ctx context.Context, server string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.dir.Remove(fileName(server)); err != nil {
		return fmt.Errorf("deleting the token of %s: %w", server, err)
	}
	return nil
}

// Lock implements Locker with a flock beside the server's file, so
// gateways sharing the state directory refresh one at a time.
func (s *FileStore) Lock(ctx context.Context, server string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := s.dir.Lock(fileName(server))
	if err != nil {
		return nil, fmt.Errorf("locking the token of %s: %w", server, err)
	}
	return unlock, nil
}

func (s *FileStore) String() string {
	p, _ := s.dir.Path(fileName("NAME"))
	return "file " + p
}

// keyringService is the service name of toolbridge's keyring entries.
const keyringService = "toolbridge"

// KeyringStore keeps records in the OS keyring (macOS Keychain, Windows
// Credential Manager, the freedesktop Secret Service on Linux) through
// github.com/zalando/go-keyring, one entry per server.
type KeyringStore struct {
	// Locks, when set, is the state directory whose lock files keep
	// gateways sharing the keyring from refreshing at once (the keyring
	// has no locks of its own).
	Locks *statefile.Dir
}

// Lock implements Locker when the store has a state directory for locks.
func (s KeyringStore) Lock(ctx context.Context, server string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Locks == nil {
		return func() {}, nil
	}
	unlock, err := s.Locks.Lock(fileName(server))
	if err != nil {
		return nil, fmt.Errorf("locking the token of %s: %w", server, err)
	}
	return unlock, nil
}

func keyringUser(server string) string { return "oauth:" + server }

// Load implements Store.
func (KeyringStore) Load(ctx context.Context, server string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := keyring.Get(keyringService, keyringUser(server))
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("loading the token of %s from the keyring: %w", server, err)
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("loading the token of %s: the keyring entry %s/%s is corrupt (run toolbridge auth logout %s): %w",
			server, keyringService, keyringUser(server), server, err)
	}
	return &r, nil
}

// Save implements Store.
func (KeyringStore) Save(ctx context.Context, server string, r *Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("saving the token of %s: %w", server, err)
	}
	if err := keyring.Set(keyringService, keyringUser(server), string(b)); err != nil {
		return fmt.Errorf("saving the token of %s in the keyring: %w", server, err)
	}
	return nil
}

// Delete implements Store.
func (KeyringStore) Delete(ctx context.Context, server string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := keyring.Delete(keyringService, keyringUser(server))
	if err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return fmt.Errorf("deleting the token of %s from the keyring: %w", server, err)
	}
	return nil
}

func (KeyringStore) String() string { return "the OS keyring" }

// keyringAvailable probes the keyring with a read of an entry that does
// not exist: only a working keyring answers "not found". Without a secret
// service (a server, a container, CI) the read fails and the file store
// is used instead.
func keyringAvailable() bool {
	_, err := keyring.Get(keyringService, "probe")
	return errors.Is(err, keyring.ErrNotFound)
}

// OpenStore returns the token store the config's token_store names:
// keyring, file (under state_dir), or auto: the OS keyring when one
// answers, else the file.
func OpenStore(cfg *config.Config) (Store, error) {
	switch cfg.TokenStore {
	case config.TokenStoreKeyring:
		if !keyringAvailable() {
			return nil, errors.New("opening the token store: token_store is keyring, but no OS keyring answers (set token_store: auto or file)")
		}
		return keyringStore(cfg.StateDir), nil
	case config.TokenStoreFile:
		return NewFileStore(cfg.StateDir)
	}
	if keyringAvailable() {
		return keyringStore(cfg.StateDir), nil
	}
	return NewFileStore(cfg.StateDir)
}

// keyringStore is the keyring store with its locks under stateDir, when
// there is one.
func keyringStore(stateDir string) KeyringStore {
	if d, err := statefile.Open(stateDir); err == nil {
		return KeyringStore{Locks: &d}
	}
	return KeyringStore{}
}
