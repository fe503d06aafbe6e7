package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// signer signs private_key_jwt client assertions (RFC 7523 §2.2) with an
// ES256, ES384 or RS256 key.
type signer struct {
	alg string
	key crypto.Signer
}

// parseSigner reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) and
// checks it fits alg; an empty alg is chosen from the key. Errors never
// quote the key.
func parseSigner(pemText, alg string) (*signer, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("private key: not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: cannot parse the %s block", block.Type)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		want := map[int]string{256: "ES256", 384: "ES384"}[k.Curve.Params().BitSize]
		if want == "" {
			return nil, fmt.Errorf("private key: EC curve %s is not supported", k.Curve.Params().Name)
		}
		if alg == "" {
			alg = want
		}
		if alg != want {
			return nil, fmt.Errorf("private key: a %s key cannot sign %s", k.Curve.Params().Name, alg)
		}
		return &signer{alg: alg, key: k}, nil
	case *rsa.PrivateKey:
		if alg == "" {
			alg = "RS256"
		}
		if alg != "RS256" {
			return nil, fmt.Errorf("private key: an RSA key signs RS256, not %s", alg)
		}
		return &signer{alg: alg, key: k}, nil
	}
	return nil, fmt.Errorf("private key: %T keys are not supported (want EC or RSA)", key)
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
