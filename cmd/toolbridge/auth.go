package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
)

// loginTimeout bounds how long auth login waits for the browser's
// redirect.
const loginTimeout = 5 * time.Minute

// authCmd groups the auth subcommands.
func (a *app) authCmd() *cobra.Command {
	return group("auth", "Log in to remote servers that need OAuth, show and end those logins",
		a.authLoginCmd(), a.authStatusCmd(), a.authLogoutCmd())
}

// oauthClient builds the OAuth client of one configured server.
func (a *app) oauthClient(ctx context.Context, cfg *config.Config, name string) (*oauth.Client, error) {
	s, ok := cfg.Servers[name]
	if !ok {
		names := slices.Sorted(maps.Keys(cfg.Servers))
		return nil, fmt.Errorf("no server %q in the config (it has %s)", name, strings.Join(names, ", "))
	}
	store, err := a.tokenStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	oc, err := oauth.ConfigFor(name, s, store)
	if err != nil {
		return nil, err
	}
	return oauth.New(oc)
}

func oneServerArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf(cmd, "%s takes one SERVER name, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

func (a *app) authLoginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Log in to a remote server (OAuth), opening the browser",
		Long: `Log in to a remote MCP server that needs OAuth: toolbridge discovers its
authorization server, opens the login page in the browser (or prints the URL
with --no-browser or when no browser can be opened) and takes the redirect on
127.0.0.1 (a free port, or auth.redirect_port). The token is kept in the OS
keyring or under state_dir; a running gateway picks it up without a restart.
A client_credentials server gets its token at once, without a browser.`,
		Args: oneServerArg,
	}
	f := a.configFlags(cmd, noKeyFlags)
	noBrowser := cmd.Flags().Bool("no-browser", false, "print the login URL instead of opening a browser")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		c, err := a.oauthClient(cmd.Context(), cfg, args[0])
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), loginTimeout)
		defer cancel()
		open := func(_ context.Context, authURL string) error {
			if !*noBrowser && openBrowser(authURL, a.environ) == nil {
				fmt.Fprintf(a.unredactedErr(), "Opened the browser to log in to %s. If nothing opened, visit:\n  %s\n", args[0], authURL)
				return nil
			}
			fmt.Fprintf(a.unredactedErr(), "To log in to %s, open this URL in a browser:\n  %s\n", args[0], authURL)
			return nil
		}
		if err := c.Login(ctx, open); err != nil {
			return err
		}
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.io.out, "Logged in to %s%s (token in %s).\n", args[0], describeStatus(st), c.Store())
		return nil
	}
	return cmd
}

// describeStatus is ", scopes a b, expires 15:04" or "".
func describeStatus(st oauth.Status) string {
	var parts []string
	if len(st.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(st.Scopes, " "))
	}
	if !st.Expires.IsZero() {
		parts = append(parts, "expires "+st.Expires.Local().Format(time.DateTime))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// openBrowser opens url in the user's browser, or says it cannot.
func openBrowser(url string, environ []string) error {
	var name string
	var args []string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		set := func(name string) bool { v, _ := config.LookupEnv(environ, name); return v != "" }
		if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
			return errors.New("no display")
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, append(args, url)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

func (a *app) authStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each remote server's login: authorized, expired, needs login or not logged in, expiry and scopes",
		Args:  noArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		store, err := a.tokenStore(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.io.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tSTATE\tEXPIRES\tSCOPES")
		n := 0
		for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
			s := cfg.Servers[name]
			if s.URL == "" {
				continue
			}
			n++
			oc, err := oauth.ConfigFor(name, s, store)
			if err != nil {
				fmt.Fprintf(tw, "%s\terror: %v\t\t\n", name, err)
				continue
			}
			c, err := oauth.New(oc)
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				fmt.Fprintf(tw, "%s\terror: %v\t\t\n", name, err)
				continue
			}
			state := st.State
			if st.State == "not logged in" && s.AuthType() == "" {
				state = "no login stored"
			}
			expires := "-"
			if !st.Expires.IsZero() {
				expires = st.Expires.Local().Format(time.DateTime)
			}
			scopes := strings.Join(st.Scopes, " ")
			if scopes == "" {
				scopes = "-"
			}
			if st.Reason != "" {
				state += " (" + st.Reason + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, state, expires, scopes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintln(a.io.err, "No remote servers in the config: only servers with a url log in.")
		}
		fmt.Fprintf(a.io.err, "Tokens are kept in %s.\n", store)
		return nil
	}
	return cmd
}

func (a *app) authLogoutCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logout SERVER",
		Short: "Revoke a server's token where it supports revocation, and delete it locally",
		Args:  oneServerArg,
	}
	f := a.configFlags(cmd, noKeyFlags)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		c, err := a.oauthClient(cmd.Context(), cfg, args[0])
		if err != nil {
			return err
		}
		if err := c.Logout(cmd.Context()); err != nil {
			fmt.Fprintf(a.io.err, "Deleted the token of %s locally, but revoking it failed: %v\n", args[0], err)
			return nil
		}
		fmt.Fprintf(a.io.out, "Logged out of %s.\n", args[0])
		return nil
	}
	return cmd
}
