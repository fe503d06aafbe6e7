package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/toolbridge/toolbridge/config"
)

// signer signs private_key_jwt client assertions (RFC 7523 §2.2) with an
// ES256, ES384 or RS256 key.
type signer struct {
	alg string
	key crypto.Signer
}

// parseSigner reads a PEM private key and checks it fits alg (see
// config.ParseSigningKey, which config check uses too).
func parseSigner(pemText, alg string) (*signer, error) {
	key, alg, err := config.ParseSigningKey(pemText, alg)
	if err != nil {
		return nil, err
	}
	return &signer{alg: alg, key: key}, nil
}

// assertion returns a signed JWT naming the client as issuer and subject
// and the authorization server as audience, valid for five minutes.
func (s *signer) assertion(clientID, audience string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	header, _ := json.Marshal(map[string]string{"alg": s.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	var sig []byte
	var err error
	switch k := s.key.(type) {
	case *ecdsa.PrivateKey:
		var digest []byte
		if s.alg == "ES384" {
			h := sha512.Sum384([]byte(input))
			digest = h[:]
		} else {
			h := sha256.Sum256([]byte(input))
			digest = h[:]
		}
		var r, ss *big.Int
		r, ss, err = ecdsa.Sign(rand.Reader, k, digest)
		if err == nil {
			// JWS wants r || s, each the curve's size (RFC 7518 §3.4).
			n := (k.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*n)
			r.FillBytes(sig[:n])
			ss.FillBytes(sig[n:])
		}
	case *rsa.PrivateKey:
		h := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	}
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}
