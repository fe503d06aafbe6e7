package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolbridge/toolbridge/bridge/policy"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// Hooks built from config: a command hook that denies deleting issues,
// with the reason the model will read, and how the gateway uses them.
func ExampleNewHooks() {
	cfg := config.Default()
	cfg.Hooks = []config.Hook{{
		Match:   "github::delete_*",
		Command: "sh",
		Args:    []string{"-c", `echo "deleting is not allowed through the gateway" >&2; exit 2`},
		Timeout: 5 * time.Second,
	}}
	hooks, err := policy.NewHooks(&cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hooks.Close()

	ctx := context.Background()
	for _, tool := range []string{"create_issue", "delete_issue"} {
		call := policy.Call{Server: "github", Tool: tool, Via: trace.ViaToolCall, Arguments: map[string]any{"id": 7}}
		start := time.Now()
		d, _ := hooks.BeforeCall(ctx, call) // the error is always nil for *Hooks
		if d.Deny {
			fmt.Printf("%s: denied: %s\n", tool, d.Reason)
			hooks.AfterCall(ctx, call, policy.Result{Denied: true, Reason: d.Reason, Duration: time.Since(start)})
			continue
		}
		fmt.Printf("%s: allowed\n", tool)
		// ... call the upstream ...
		hooks.AfterCall(ctx, call, policy.Result{Duration: time.Since(start)})
	}
	// Output:
	// create_issue: allowed
	// delete_issue: denied: deleting is not allowed through the gateway
}
