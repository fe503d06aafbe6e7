package policy

import "time"

// EventTrust marks an audit line that records a change in a tool's trust
// standing rather than a call.
const EventTrust = "trust"

// AuditTrust appends a trust change to the audit log, if one is
// configured: a line with event "trust", the kind of change (quarantined,
// warned, released) as outcome and its reason as error.
func (h *Hooks) AuditTrust(server, tool, kind, reason string) {
	if h == nil {
		return
	}
	for _, hook := range h.hooks {
		if a, ok := hook.(*Audit); ok {
			_ = a.Write(AuditRecord{
				Time: time.Now().UTC(), Event: EventTrust,
				Server: server, Tool: tool, Outcome: kind, Error: reason,
			})
		}
	}
}
