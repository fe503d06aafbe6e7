package config

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// ParseSigningKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) for
// private_key_jwt client authentication and checks that it can sign alg
// (ES256, ES384 or RS256); an empty alg is chosen from the key and
// returned. Errors never quote the key. It lives here so that `config
// check` refuses a key that the OAuth client could not use, rather than
// the gateway failing on it, and retrying, at every connect.
func ParseSigningKey(pemText, alg string) (crypto.Signer, string, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", errors.New("private key: not PEM")
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
		return nil, "", fmt.Errorf("private key: cannot parse the %s block", block.Type)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		want := map[int]string{256: "ES256", 384: "ES384"}[k.Curve.Params().BitSize]
		if want == "" {
			return nil, "", fmt.Errorf("private key: EC curve %s is not supported", k.Curve.Params().Name)
		}
		if alg == "" {
			alg = want
		}
		if alg != want {
			return nil, "", fmt.Errorf("private key: a %s key cannot sign %s", k.Curve.Params().Name, alg)
		}
		return k, alg, nil
	case *rsa.PrivateKey:
		if alg == "" {
			alg = "RS256"
		}
		if alg != "RS256" {
			return nil, "", fmt.Errorf("private key: an RSA key signs RS256, not %s", alg)
		}
		return k, alg, nil
	}
	return nil, "", fmt.Errorf("private key: %T keys are not supported (want EC or RSA)", key)
}
