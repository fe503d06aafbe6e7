package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// Call is a tool call as hooks see it: always the real tool on the real
// server, whether the client called it directly or through tool_call.
type Call struct {
	// Server is the upstream server's name.
	Server string
	// Tool is the tool's name on that server.
	Tool string
	// Class is the tool's class.
	Class config.Class
	// Via is trace.ViaToolCall or trace.ViaDirect.
	Via string
	// Exposed is the name the client knows the tool by, when a tools:
	// rule renamed it; empty otherwise.
	Exposed string
	// Arguments are the real tool's arguments (any JSON-encodable value,
	// usually map[string]any or json.RawMessage).
	Arguments any
	// SessionID is the client's MCP session, if any.
	SessionID string
	// Subject is the authenticated caller (the OAuth access token's sub),
	// if any. The token itself never reaches hooks.
	Subject string
	// Annotations are the tool's MCP annotations (readOnlyHint,
	// destructiveHint, ...) as its server sent them; nil when it sent none.
	Annotations json.RawMessage
}

// ID is the call's canonical "server::tool".
func (c Call) ID() string { return toolid.Join(c.Server, c.Tool) }

// Decision is what BeforeCall decided. The zero value allows.
type Decision struct {
	// Deny stops the call; the client gets Reason as a tool error.
	Deny bool
	// Reason is shown to the model when Deny is set.
	Reason string
	// Hook names the hook that denied, for logs.
	Hook string
}

// Outcomes of a call, as the audit log writes them.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error"
	OutcomeError     = "error"
	OutcomeDenied    = "denied"
)

// Result is how a call ended, given to AfterCall.
type Result struct {
	// Value is the result sent to the client (JSON-encodable), if any.
	Value any
	// IsError is the result's isError flag.
	IsError bool
	// Err is set when there was no result: upstream down, timeout,
	// JSON-RPC error.
	Err error
	// Code is the JSON-RPC error code behind Err, if any.
	Code int
	// Denied is set when a BeforeCall hook stopped the call; Reason says
	// why.
	Denied bool
	Reason string
	// Duration is how long the call took, hooks included.
	Duration time.Duration
}

// Outcome classifies the result: ok, tool_error, error or denied.
func (r Result) Outcome() string {
	switch {
	case r.Denied:
		return OutcomeDenied
	case r.Err != nil:
		return OutcomeError
	case r.IsError:
		return OutcomeToolError
	}
	return OutcomeOK
}

// Hook observes and may veto tool calls.
//
// BeforeCall runs before the call goes upstream; a Decision with Deny set
// stops it. An error means the hook itself failed: Hooks logs it and lets
// the call through (a broken hook must not take every tool down; use Deny
// to block). AfterCall runs once the call has ended, denied calls
// included, and cannot change anything.
//
// Both may run concurrently for different calls.
type Hook interface {
	BeforeCall(ctx context.Context, c Call) (Decision, error)
	AfterCall(ctx context.Context, c Call, r Result)
}

// Hooks runs hooks in order. The first deny wins and the hooks after it
// are not asked; a hook's error is logged and counts as allow. AfterCall
// runs every hook's AfterCall, in order.
//
// A nil *Hooks allows everything, so a gateway without hooks need not
// check. *Hooks is itself a Hook.
type Hooks struct {
	hooks  []Hook
	logger *slog.Logger
	closer []func() error
}

// NewChain runs the given hooks in order. logger receives hook errors;
// nil discards them.
func NewChain(logger *slog.Logger, hooks ...Hook) *Hooks {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Hooks{hooks: hooks, logger: logger}
}

// NewHooks builds the hooks cfg configures: the command hooks of
// cfg.Hooks in order, then the audit log of cfg.Audit (last, so it sees
// the final outcome of every call). Close it when done.
func NewHooks(cfg *config.Config, logger *slog.Logger) (*Hooks, error) {
	h := NewChain(logger)
	for i, hc := range cfg.Hooks {
		ch, err := NewCommandHook(hc, h.logger)
		if err != nil {
			return nil, fmt.Errorf("configuring hooks[%d]: %w", i, err)
		}
		h.hooks = append(h.hooks, ch)
	}
	if cfg.Audit.File != "" {
		a, err := OpenAudit(cfg.Audit.File)
		if err != nil {
			return nil, err
		}
		h.hooks = append(h.hooks, a)
		h.closer = append(h.closer, a.Close)
	}
	return h, nil
}

// Len is the number of hooks.
func (h *Hooks) Len() int {
	if h == nil {
		return 0
	}
	return len(h.hooks)
}

// BeforeCall asks each hook in order and returns the first deny, or
// the zero Decision (allow). The error is always nil (hook errors are logged and allow); it
// is there so *Hooks is a Hook.
func (h *Hooks) BeforeCall(ctx context.Context, c Call) (Decision, error) {
	if h == nil {
		return Decision{}, nil
	}
	for _, hook := range h.hooks {
		d, err := hook.BeforeCall(ctx, c)
		if err != nil {
			h.logger.Warn("hook failed; allowing the call", "hook", hookName(hook), "tool", c.ID(), "err", err)
			continue
		}
		if d.Deny {
			if d.Hook == "" {
				d.Hook = hookName(hook)
			}
			if d.Reason == "" {
				d.Reason = "denied by hook " + d.Hook
			}
			h.logger.Info("hook denied a tool call", "hook", d.Hook, "tool", c.ID(), "reason", d.Reason)
			return d, nil
		}
	}
	return Decision{}, nil
}

// AfterCall runs every hook's AfterCall in order.
func (h *Hooks) AfterCall(ctx context.Context, c Call, r Result) {
	if h == nil {
		return
	}
	for _, hook := range h.hooks {
		hook.AfterCall(ctx, c, r)
	}
}

// Close releases what the hooks hold: it flushes and closes the audit
// file.
func (h *Hooks) Close() error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, c := range h.closer {
		errs = append(errs, c())
	}
	h.closer = nil
	return errors.Join(errs...)
}

// hookName names a hook in logs: its String method, or its type.
func hookName(h Hook) string {
	if s, ok := h.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", h)
}
