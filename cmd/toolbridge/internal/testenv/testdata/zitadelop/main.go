// Command zitadelop runs zitadel's example OpenID provider
// (github.com/zitadel/oidc/v3/example/server: its exampleop handlers and
// its in-memory storage) for toolbridge's tests, configured the way the
// tests need it: it listens on 127.0.0.1 only (the example's own main
// listens on every interface), and it adds service clients that get
// tokens with the client_credentials grant, without a browser.
//
// Flags:
//
//	-audience A      the aud of the service clients' access tokens
//	-introspector id:secret  the client that may introspect them
//	-client id:secret:jwt|opaque:group,group[:audience]  a service client
//	                 (repeatable); audience, if given, replaces -audience
//
// It prints "issuer <url>" on stdout once it serves.
//
// The example's storage issues opaque access tokens to every client it
// ships (they all say op.AccessTokenTypeBearer); a service client marked
// jwt gets a JWT access token signed with the provider's key, published
// in its JWKS. Opaque tokens can be checked at its introspection endpoint
// by a client in the token's audience: the -introspector client.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

type service struct {
	secret   string
	jwt      bool
	groups   []string
	audience []string
}

// store is the example storage with the service clients added.
type store struct {
	*storage.Storage
	services map[string]service
}

// serviceClient is an example web client that may only use
// client_credentials, with the access token type the test asked for.
type serviceClient struct {
	*storage.Client
	jwt bool
}

func (c serviceClient) AccessTokenType() op.AccessTokenType {
	if c.jwt {
		return op.AccessTokenTypeJWT
	}
	return op.AccessTokenTypeBearer
}

func (c serviceClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}

func (s *store) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	svc, ok := s.services[id]
	if !ok {
		return s.Storage.ClientCredentials(ctx, id, secret)
	}
	if subtle.ConstantTimeCompare([]byte(svc.secret), []byte(secret)) != 1 {
		return nil, errors.New("wrong service user or password")
	}
	return serviceClient{Client: storage.WebClient(id, svc.secret), jwt: svc.jwt}, nil
}

func (s *store) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	svc, ok := s.services[id]
	if !ok {
		return s.Storage.ClientCredentialsTokenRequest(ctx, id, scopes)
	}
	return &oidc.JWTTokenRequest{Subject: id, Audience: svc.audience, Scopes: scopes}, nil
}

// GetPrivateClaimsFromScopes adds what a JWT access token says beyond the
// registered claims: the service client's groups and the granted scopes
// (the library's JWT leaves scope out).
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, subject, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, subject, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if svc, ok := s.services[subject]; ok {
		if claims == nil {
			claims = map[string]any{}
		}
		claims["groups"] = svc.groups
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

// SetIntrospectionFromToken is the example's, plus the token's audience
// and, for a service client, its groups: the example answers only a
// client in the token's audience, and says nothing of the audience.
func (s *store) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	if err := s.Storage.SetIntrospectionFromToken(ctx, resp, tokenID, subject, clientID); err != nil {
		return err
	}
	resp.Subject = subject
	if svc, ok := s.services[subject]; ok {
		resp.Audience = svc.audience
		if resp.Claims == nil {
			resp.Claims = map[string]any{}
		}
		resp.Claims["groups"] = svc.groups
	}
	return nil
}

// users is the example user store plus one user per service client: the
// example's introspection and userinfo answer only for a known user.
type users struct {
	storage.UserStore
	services map[string]service
}

func (u users) GetUserByID(id string) *storage.User {
	if _, ok := u.services[id]; ok {
		return &storage.User{ID: id, Username: id}
	}
	return u.UserStore.GetUserByID(id)
}

type clientsFlag []string

func (c *clientsFlag) String() string     { return strings.Join(*c, ",") }
func (c *clientsFlag) Set(v string) error { *c = append(*c, v); return nil }

func main() {
	var clients clientsFlag
	audience := flag.String("audience", "", "the aud of the service clients' tokens")
	introspector := flag.String("introspector", "", "id:secret of the client that may introspect the service clients' tokens")
	flag.Var(&clients, "client", "id:secret:jwt|opaque:group,group (repeatable)")
	flag.Parse()
	if err := run(*audience, *introspector, clients); err != nil {
		fmt.Fprintln(os.Stderr, "zitadelop:", err)
		os.Exit(1)
	}
}

func run(audience, introspector string, clients []string) error {
	if audience == "" {
		return errors.New("no -audience")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	issuer := "http://" + ln.Addr().String()
	aud := []string{audience}
	if introspector != "" {
		id, secret, ok := strings.Cut(introspector, ":")
		if !ok {
			return fmt.Errorf("-introspector %q: want id:secret", introspector)
		}
		storage.RegisterClients(storage.WebClient(id, secret))
		aud = append(aud, id)
	}
	services := map[string]service{}
	for _, c := range clients {
		parts := strings.SplitN(c, ":", 5)
		if len(parts) < 4 || (parts[2] != "jwt" && parts[2] != "opaque") {
			return fmt.Errorf("-client %q: want id:secret:jwt|opaque:groups[:audience]", c)
		}
		var groups []string
		if parts[3] != "" {
			groups = strings.Split(parts[3], ",")
		}
		svc := service{secret: parts[1], jwt: parts[2] == "jwt", groups: groups, audience: aud}
		if len(parts) == 5 && parts[4] != "" {
			svc.audience = append([]string{parts[4]}, aud[1:]...)
		}
		services[parts[0]] = svc
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st := &store{
		Storage:  storage.NewStorage(users{storage.NewUserStore(issuer), services}),
		services: services,
	}
	router := exampleop.SetupServer(issuer, st, logger, false)
	srv := &http.Server{Handler: router}
	fmt.Println("issuer", issuer)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}
