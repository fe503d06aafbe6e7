package state

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
)

// Tokens keeps the upstream OAuth records (access and refresh tokens,
// client secrets) in Redis, so that every replica uses the one token a
// login or a refresh got. A record is sealed with AES-256-GCM under a key
// from the environment before it leaves the process: whoever can read the
// Redis, or a copy of its data, reads no token.
//
// Tokens implements oauth.Store and oauth.Locker: its Lock is held across
// replicas (see [Tokens.Lock]), so an expired token is refreshed once,
// not once per replica.
type Tokens struct {
	st   *Store
	keys []tokenKey // keys[0] seals; every one opens
	env  string     // the variable the keys came from, for messages

	// last is the record each server had when Redis last answered: while
	// Redis is down a replica goes on sending a token it already holds
	// (refreshing one needs the lock, and fails clearly).
	mu   sync.Mutex
	last map[string]*oauth.Record
}

// tokenKey is one AES-256-GCM key and its id, the id being what a sealed
// record names so that a rotated key can still open what it sealed.
type tokenKey struct {
	id   string
	aead cipher.AEAD
}

// TokenKeySize is the length of a token key: AES-256.
const TokenKeySize = 32

// NewTokens returns the token store on st, with its keys read from the
// variable envVar of environ (config redis.token_key_env). The error says
// what is wrong with the variable and never shows its value.
func NewTokens(st *Store, environ []string, envVar string) (*Tokens, error) {
	value, ok := lookupEnv(environ, envVar)
	if !ok || strings.TrimSpace(value) == "" {
		return nil, fmt.Errorf("reading the token key: redis.url is set, so upstream OAuth tokens are kept in Redis, encrypted with the key in $%s, which is not set (make one with: openssl rand -base64 32; every replica needs the same)", envVar)
	}
	keys, err := parseTokenKeys(value)
	if err != nil {
		return nil, fmt.Errorf("reading the token key in $%s: %w", envVar, err)
	}
	return &Tokens{st: st, keys: keys, env: envVar, last: map[string]*oauth.Record{}}, nil
}

// lookupEnv finds name in environ, the last setting winning as in os/exec.
func lookupEnv(environ []string, name string) (string, bool) {
	value, found := "", false
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value, found = v, true
		}
	}
	return value, found
}

// parseTokenKeys reads comma-separated base64 keys of TokenKeySize bytes
// each. Its errors name a key by its position, never by its text.
func parseTokenKeys(value string) ([]tokenKey, error) {
	var keys []tokenKey
	for i, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		raw, err := base64.StdEncoding.DecodeString(part)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(part)
		}
		if err != nil {
			return nil, fmt.Errorf("key %d is not base64 (make one with: openssl rand -base64 32)", i+1)
		}
		if len(raw) != TokenKeySize {
			return nil, fmt.Errorf("key %d is %d bytes, want %d (make one with: openssl rand -base64 32)", i+1, len(raw), TokenKeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		// The id is a digest of the key under a label of its own: it
		// tells keys apart and says nothing of them.
		sum := sha256.Sum256(append([]byte("toolbridge token key id\x00"), raw...))
		keys = append(keys, tokenKey{id: hex.EncodeToString(sum[:4]), aead: aead})
	}
	return keys, nil
}

// serverName is what a configured server's name may be (see config):
// always safe inside a key.
var serverName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func checkServer(server string) error {
	if !serverName.MatchString(server) {
		return fmt.Errorf("invalid server name %q for shared state", server)
	}
	return nil
}

// tokenKeyName is the Redis key of a server's record.
func (t *Tokens) tokenKeyName(server string) string { return t.st.Key("oauth", server) }

// sealedRecord is a record as Redis holds it. V is the format, Alg the
// cipher, KID the id of the key that sealed it; the AAD is the Redis key
// (see aad), so a record copied to another server's key does not open.
type sealedRecord struct {
	V     int    `json:"v"`
	Alg   string `json:"alg"`
	KID   string `json:"kid"`
	Nonce []byte `json:"nonce"`
	CT    []byte `json:"ct"`
}

const (
	sealedVersion = 1
	sealedAlg     = "A256GCM"
	// maxSealed bounds what is read from a key: a record is a few KB, and
	// someone else may have written anything there.
	maxSealed = 1 << 20
)

// aad binds a sealed record to its key name.
func aad(keyName string) []byte { return []byte("toolbridge oauth record v1\x00" + keyName) }

// seal encrypts r for keyName under the first key.
func (t *Tokens) seal(keyName string, r *oauth.Record) ([]byte, error) {
	plain, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	k := t.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return json.Marshal(sealedRecord{V: sealedVersion, Alg: sealedAlg, KID: k.id, Nonce: nonce, CT: k.aead.Seal(nil, nonce, plain, aad(keyName))})
}

// open decrypts what Redis holds at keyName. Anything may be there: its
// errors say what is wrong and quote none of it.
func (t *Tokens) open(keyName string, raw []byte) (*oauth.Record, error) {
	if len(raw) > maxSealed {
		return nil, fmt.Errorf("it is %d bytes, more than a record can be", len(raw))
	}
	var s sealedRecord
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("it is not a sealed record (not JSON of the expected form)")
	}
	switch {
	case s.V != sealedVersion:
		return nil, fmt.Errorf("format version %d, want %d", s.V, sealedVersion)
	case s.Alg != sealedAlg:
		return nil, fmt.Errorf("cipher %q, want %s", oneWord(s.Alg), sealedAlg)
	}
	for _, k := range t.keys {
		if k.id != s.KID {
			continue
		}
		if len(s.Nonce) != k.aead.NonceSize() {
			return nil, fmt.Errorf("its nonce is %d bytes, want %d", len(s.Nonce), k.aead.NonceSize())
		}
		plain, err := k.aead.Open(nil, s.Nonce, s.CT, aad(keyName))
		if err != nil {
			return nil, errors.New("it does not decrypt: it was altered, or sealed for another key name")
		}
		var r oauth.Record
		if err := json.Unmarshal(plain, &r); err != nil {
			return nil, errors.New("it decrypts to something that is not a record")
		}
		return &r, nil
	}
	return nil, fmt.Errorf("it was sealed with key id %q, which no key in $%s has (was the key rotated without keeping the old one after it?)", oneWord(s.KID), t.env)
}

// oneWord shows at most a short word of what a record said.
func oneWord(s string) string {
	if len(s) > 16 {
		s = s[:16] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// Load implements oauth.Store. While Redis is down it returns the record
// last read or written here, if any, so that calls with a token this
// replica already holds go on.
func (t *Tokens) Load(ctx context.Context, server string) (*oauth.Record, error) {
	if err := checkServer(server); err != nil {
		return nil, err
	}
	name := t.tokenKeyName(server)
	raw, err := t.st.Redis().Get(ctx, name).Bytes()
	if errors.Is(err, redis.Nil) {
		_ = t.st.Check(nil)
		t.remember(server, nil)
		return nil, oauth.ErrNotFound
	}
	if err = t.st.Check(err); err != nil {
		if errors.Is(err, ErrUnavailable) {
			if r := t.remembered(server); r != nil {
				return r, nil
			}
		}
		return nil, fmt.Errorf("loading the token of %s: %w", server, err)
	}
	r, err := t.open(name, raw)
	if err != nil {
		return nil, fmt.Errorf("loading the token of %s: the Redis key %s holds no record this gateway can read: %v (run toolbridge auth login %s)", server, name, err, server)
	}
	t.remember(server, r)
	return r, nil
}

// Save implements oauth.Store.
func (t *Tokens) Save(ctx context.Context, server string, r *oauth.Record) error {
	if err := checkServer(server); err != nil {
		return err
	}
	name := t.tokenKeyName(server)
	sealed, err := t.seal(name, r)
	if err != nil {
		return fmt.Errorf("saving the token of %s: sealing it: %w", server, err)
	}
	if err := t.st.Check(t.st.Redis().Set(ctx, name, sealed, 0).Err()); err != nil {
		return fmt.Errorf("saving the token of %s: %w", server, err)
	}
	t.remember(server, r)
	return nil
}

// Delete implements oauth.Store.
func (t *Tokens) Delete(ctx context.Context, server string) error {
	if err := checkServer(server); err != nil {
		return err
	}
	if err := t.st.Check(t.st.Redis().Del(ctx, t.tokenKeyName(server)).Err()); err != nil {
		return fmt.Errorf("deleting the token of %s: %w", server, err)
	}
	t.remember(server, nil)
	return nil
}

// String says where the tokens are, for messages such as auth status: the
// Redis URL without its password and the key pattern, never a token.
func (t *Tokens) String() string {
	return "Redis " + t.st.shown + " (key " + t.tokenKeyName("NAME") + ", encrypted)"
}

// remember keeps the last record read for server, so that a replica can go
// on sending it while Redis is down.
func (t *Tokens) remember(server string, r *oauth.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r == nil {
		delete(t.last, server)
		return
	}
	c := *r
	t.last[server] = &c
}

func (t *Tokens) remembered(server string) *oauth.Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.last[server]; ok {
		c := *r
		return &c
	}
	return nil
}

// Lock implements oauth.Locker with a lock in Redis (see [Store.Lock]),
// so that replicas refresh one server's token one at a time, as the file
// lock does for processes sharing a state directory: with refresh token
// rotation, a second refresh with the same token would fail and could
// revoke the whole grant.
func (t *Tokens) Lock(ctx context.Context, server string) (func(), error) {
	if err := checkServer(server); err != nil {
		return nil, err
	}
	unlock, err := t.st.Lock(ctx, t.st.Key("oauth-lock", server))
	if err != nil {
		return nil, fmt.Errorf("locking the token of %s: %w", server, err)
	}
	return unlock, nil
}
