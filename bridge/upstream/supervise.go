package upstream

import (
	"context"
	"fmt"
	"time"
)

// supervisor is the handle of one server's supervising goroutine.
type supervisor struct{ stop context.CancelFunc }

// supervise keeps one server connected until the pool closes or a reload
// replaces or removes it: when its connection is lost (or it never came
// up), it reconnects with exponential backoff (restart.initial, doubling up
// to restart.max). Meanwhile the server's tools stay in the catalog and
// calls to them get an error naming the server and the next attempt (see
// Pool.Down). In-process servers cannot be lost and are not supervised.
func (p *Pool) supervise(spec Spec, u *Conn) {
	if spec.InProcess != nil {
		return
	}
	// Read at each step rather than once, so that a reload's new backoff
	// applies without reconnecting anything.
	initial := func() time.Duration { return max(p.cfg.Load().Restart.Initial, minRestartDelay) }
	maxDelay := func() time.Duration { return max(p.cfg.Load().Restart.Max, minRestartDelay) }
	ctx, stop := context.WithCancel(p.life)
	sup := &supervisor{stop: stop}
	p.mu.Lock()
	if prev := p.sups[spec.Name]; prev != nil {
		prev.stop()
	}
	p.sups[spec.Name] = sup
	p.mu.Unlock()
	p.supervisors.Go(func() {
		defer stop()
		delay := initial()
		for {
			if u != nil {
				select {
				case <-u.lostCh:
				case <-ctx.Done():
					return
				}
				u.mu.RLock()
				why := u.lostWhy
				u.mu.RUnlock()
				fmt.Fprintf(p.progress, "toolbridge: ✗ %-20s lost: %s; reconnecting\n", spec.Name, why)
				p.setDown(sup, spec.Name, "lost: "+why, time.Now().Add(delay))
				delay = initial()
				// Handled: the attempts below back off from here, and a
				// failed one must not count as this loss again.
				u = nil
			}
			// Back off before each attempt: a server that dies at once must
			// not be restarted in a tight loop.
			p.setNext(sup, spec.Name, time.Now().Add(delay))
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			next, took, err := p.dial(ctx, spec)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				delay = min(delay*2, maxDelay())
				if IsNeedsLogin(err) {
					// No point asking the server again before a login:
					// wait for one, then try at once.
					p.setNeedsLogin(sup, spec.Name, err.Error())
					p.waitForLogin(ctx, spec, err)
					delay = initial()
					continue
				}
				p.setDown(sup, spec.Name, err.Error(), time.Now().Add(delay))
				continue
			}
			tools, _, _, _ := next.Snapshot()
			p.mu.Lock()
			if p.sups[spec.Name] != sup || ctx.Err() != nil {
				// Replaced or removed by a reload, or the pool is closing,
				// while this attempt was under way: it is not wanted.
				p.mu.Unlock()
				_ = next.Close()
				return
			}
			old := p.ups[spec.Name]
			p.ups[spec.Name] = next
			st := p.statuses[spec.Name]
			st.Connected, st.Tools, st.Took, st.Error, st.NextAttempt, st.NeedsLogin = true, len(tools), took, "", time.Time{}, false
			st.Restarts++
			p.statuses[spec.Name] = st
			p.mu.Unlock()
			if old != nil {
				_ = old.Close()
			}
			fmt.Fprintf(p.progress, "toolbridge: ✓ %-20s %-15s %4d tools %6d ms (reconnected)\n",
				spec.Name, spec.Transport(), len(tools), took.Milliseconds())
			if p.onReconnect != nil {
				p.onReconnect()
			}
			u = next
		}
	})
}

// setDown records that a server is down and when it is tried again, if
// sup still supervises it.
func (p *Pool) setDown(sup *supervisor, name, why string, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sups[name] != sup {
		return
	}
	st := p.statuses[name]
	st.Connected, st.Error, st.NextAttempt = false, why, next
	p.statuses[name] = st
}

// setNeedsLogin records that a server is down until a login, if sup
// still supervises it.
func (p *Pool) setNeedsLogin(sup *supervisor, name, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sups[name] != sup {
		return
	}
	st := p.statuses[name]
	st.Connected, st.Error, st.NextAttempt, st.NeedsLogin = false, why, time.Time{}, true
	p.statuses[name] = st
}

// setNext records when a server that is down is tried again, if sup
// still supervises it.
func (p *Pool) setNext(sup *supervisor, name string, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sups[name] != sup {
		return
	}
	st := p.statuses[name]
	if !st.Connected {
		st.NextAttempt = next
		p.statuses[name] = st
	}
}

// minRestartDelay keeps a zero restart setting from becoming a tight loop.
const minRestartDelay = 50 * time.Millisecond
