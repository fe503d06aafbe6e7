package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolbridge/toolbridge/bridge/trust"
)

// Pins keeps the pinned tool definitions and approvals in Redis, shared by
// every replica: it implements trust.Shared, so a trust.Store on it
// (trust.NewSharedStore) reviews, pins and approves as one on disk does.
//
// The keys, under the prefix:
//
//	pins:SERVER   hash: tool name -> the pin as JSON (trust.Pin)
//	pinver        hash: server -> a random version, new on every change;
//	              a server is in it exactly while it has pins
//	pins          pub/sub channel: a server's name when its pins change
//
// Every change is one Lua script: the pins, the version and the message
// change together. [Pins.Watch] tells a gateway when to review again.
type Pins struct {
	st *Store

	mu sync.Mutex
	// seen is the version of each server's pins this gateway last read
	// (Load) or wrote: to say when they are gone, and for Watch to tell
	// when Redis no longer holds what the gateway reviewed with.
	seen map[string]string
}

// NewPins returns the pin store on st.
func NewPins(st *Store) *Pins { return &Pins{st: st, seen: map[string]string{}} }

var _ trust.Shared = (*Pins)(nil)

func (p *Pins) pinsKey(server string) string { return p.st.Key("pins", server) }
func (p *Pins) verKey() string               { return p.st.Key("pinver") }
func (p *Pins) channel() string              { return p.st.Key("pins") }

// loadScript returns {version} when the caller's version is current, and
// {version, field, value, ...} otherwise ({""} with no pins).
var loadScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return {''} end
if v == ARGV[2] then return {v} end
local out = {v}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do out[#out + 1] = all[i] end
return out`)

// writeScript stores pins: ARGV[1] server, ARGV[2] the new version,
// ARGV[3] the channel, ARGV[4] "add" (keep existing pins) or "put",
// then tool, pin pairs. It returns how many it stored.
var writeScript = redis.NewScript(`
local n = 0
for i = 5, #ARGV, 2 do
	if ARGV[4] == 'put' then
		redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
		n = n + 1
	else
		n = n + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
	end
end
if n > 0 then
	redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
	redis.call('PUBLISH', ARGV[3], ARGV[1])
end
return n`)

// forgetScript removes the tools named after ARGV[3] (all with none) and
// returns their names.
var forgetScript = redis.NewScript(`
local removed = {}
if #ARGV == 3 then
	removed = redis.call('HKEYS', KEYS[1])
	redis.call('DEL', KEYS[1])
else
	for i = 4, #ARGV do
		if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then removed[#removed + 1] = ARGV[i] end
	end
end
if #removed > 0 then
	if redis.call('EXISTS', KEYS[1]) == 1 then
		redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
	else
		redis.call('HDEL', KEYS[2], ARGV[1])
	end
	redis.call('PUBLISH', ARGV[3], ARGV[1])
end
return removed`)

// newVersion is a random version: a counter would start again after
// Redis lost its data and could then equal one a replica holds.
func newVersion() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand does not fail
	return hex.EncodeToString(b)
}

// Load implements trust.Shared. What it reads was written by anyone who
// can write the Redis: a pin that does not decode, or is not the pin of
// the tool it is filed under, makes the server's pins an error (its tools
// are then held), never a trusted tool.
func (p *Pins) Load(server, known string) (*trust.ServerPins, string, error) {
	if err := checkServer(server); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()
	res, err := loadScript.Run(ctx, p.st.rdb, []string{p.pinsKey(server), p.verKey()}, server, known).StringSlice()
	if err = p.st.Check(err); err != nil {
		return nil, "", err
	}
	if len(res) == 0 || len(res)%2 == 0 {
		return nil, "", fmt.Errorf("the pin script answered %d values", len(res))
	}
	version := res[0]
	p.mu.Lock()
	lost := version == "" && p.seen[server] != ""
	if version != "" {
		p.seen[server] = version
	} else {
		delete(p.seen, server)
	}
	p.mu.Unlock()
	if lost {
		p.st.log.Warn("trust: the shared pins of a server are gone (forgotten, or Redis lost its data): its tools are reviewed again from the trust rules, as on a first start", "server", server)
	}
	if version == "" || len(res) == 1 && version == known {
		return nil, version, nil
	}
	sp := &trust.ServerPins{Version: trust.FormatVersion, Tools: make(map[string]trust.Pin, (len(res)-1)/2)}
	for i := 1; i < len(res); i += 2 {
		pin, err := decodePin(res[i], []byte(res[i+1]))
		if err != nil {
			return nil, "", fmt.Errorf("the pin of tool %q at Redis key %s: %w (fix or delete it: toolbridge trust forget %s::%s)", oneWord(res[i]), p.pinsKey(server), err, server, oneWord(res[i]))
		}
		sp.Tools[res[i]] = pin
	}
	if len(sp.Tools) == 0 {
		return nil, "", nil
	}
	return sp, version, nil
}

// hashForm is what Definition.Hash gives.
var hashForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// maxPin bounds one pin: a tool's definition is some KB; someone else may
// have written anything.
const maxPin = 4 << 20

// decodePin reads the pin of tool from what Redis holds.
func decodePin(tool string, raw []byte) (trust.Pin, error) {
	if len(raw) > maxPin {
		return trust.Pin{}, fmt.Errorf("it is %d bytes, more than a pin can be", len(raw))
	}
	var pin trust.Pin
	if err := json.Unmarshal(raw, &pin); err != nil {
		return trust.Pin{}, errors.New("it is not a pin (not JSON of the expected form)")
	}
	switch {
	case !hashForm.MatchString(pin.Hash):
		return trust.Pin{}, errors.New("its hash is not sha256:HEX")
	case pin.Definition.Name != tool:
		return trust.Pin{}, fmt.Errorf("it pins tool %q, not the one it is filed under", oneWord(pin.Definition.Name))
	case pin.PinnedAt.IsZero():
		return trust.Pin{}, errors.New("it has no pinned_at time")
	}
	return pin, nil
}

// write stores pins with writeScript in mode add or put.
func (p *Pins) write(server, mode string, pins map[string]trust.Pin) error {
	if err := checkServer(server); err != nil {
		return err
	}
	version := newVersion()
	args := []any{server, version, p.channel(), mode}
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		b, err := json.Marshal(pins[name])
		if err != nil {
			return fmt.Errorf("encoding the pin of %q: %w", name, err)
		}
		args = append(args, name, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()
	n, err := writeScript.Run(ctx, p.st.rdb, []string{p.pinsKey(server), p.verKey()}, args...).Int()
	if err := p.st.Check(err); err != nil {
		return err
	}
	if n > 0 {
		p.mu.Lock()
		p.seen[server] = version
		p.mu.Unlock()
	}
	return nil
}

// behind names the servers whose pins this gateway last read or wrote at
// another version than Redis holds now (v): "" when none.
func (p *Pins) behind(v map[string]string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for server, version := range p.seen {
		if v[server] != version {
			out = append(out, server+"@"+version)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// Add implements trust.Shared.
func (p *Pins) Add(server string, pins map[string]trust.Pin) error {
	return p.write(server, "add", pins)
}

// Put implements trust.Shared.
func (p *Pins) Put(server string, pins map[string]trust.Pin) error {
	return p.write(server, "put", pins)
}

// Forget implements trust.Shared.
func (p *Pins) Forget(server string, names []string) ([]string, error) {
	if err := checkServer(server); err != nil {
		return nil, err
	}
	args := []any{server, newVersion(), p.channel()}
	for _, n := range names {
		args = append(args, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()
	removed, err := forgetScript.Run(ctx, p.st.rdb, []string{p.pinsKey(server), p.verKey()}, args...).StringSlice()
	if err = p.st.Check(err); err != nil {
		return nil, err
	}
	slices.Sort(removed)
	return removed, nil
}

// Servers implements trust.Shared.
func (p *Pins) Servers() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()
	out, err := p.st.rdb.HKeys(ctx, p.verKey()).Result()
	if err = p.st.Check(err); err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(s string) bool { return checkServer(s) != nil })
	slices.Sort(out)
	return out, nil
}

// Unreachable implements trust.Shared.
func (p *Pins) Unreachable(err error) bool { return errors.Is(err, ErrUnavailable) }

// String says where the pins are, for messages: the Redis URL without its
// password and the key pattern.
func (p *Pins) String() string {
	return "Redis " + p.st.shown + " (key " + p.pinsKey("SERVER") + ")"
}

// versions reads every server's pin version.
func (p *Pins) versions(ctx context.Context) (map[string]string, error) {
	v, err := p.st.rdb.HGetAll(ctx, p.verKey()).Result()
	return v, p.st.Check(err)
}

// pollEvery is how often Watch reads the versions while its subscription
// is down (and, as a safety net, how long it trusts a quiet one): a
// change made then is seen within it.
const (
	pollEvery      = time.Second
	quietPollEvery = 5 * time.Second
)

// Watch calls changed whenever any server's pins change, by any replica
// or operator, until ctx ends. It listens on the pins channel, and reads
// the versions (one HGETALL) when the subscription is (re)made, every
// pollEvery while it is down, and every quietPollEvery while it is up,
// since a message published while a subscription reconnects is lost
// (pub/sub delivers at most once). Redis coming back empty is a change
// too: every version is gone. changed runs on Watch's goroutine; it
// should be quick or hand the work on.
func (p *Pins) Watch(ctx context.Context, changed func()) {
	var last map[string]string
	// missed: a read failed since the last that worked. It starts true,
	// so that the first read tells of a change: the gateway read the
	// pins before Watch's first read, and a change made in between would
	// otherwise be taken as what the gateway has seen.
	missed := true
	lastGap := "" // what behind said at the last poll
	// poll reads the versions and calls changed if they differ from the
	// last read, or always when told is false: a message told of a
	// change, and the read only brings last up to date, so that the next
	// poll compares with what the gateway has seen.
	poll := func(told bool) {
		pctx, cancel := context.WithTimeout(ctx, 2*ioTimeout)
		defer cancel()
		v, err := p.versions(pctx)
		if err != nil {
			missed = true
			return
		}
		// After an outage the gateway reviews again even if nothing
		// seems to have changed: it may have held tools while it
		// could not read the pins at all. It also reviews when Redis no
		// longer holds the versions the gateway itself read or wrote,
		// once per such difference: the watch may never have seen them
		// (pins written on first use, then Redis restarted empty,
		// before its first subscription), and a review that cannot
		// settle the difference (a server no longer configured) must
		// not run again on every poll.
		gap := p.behind(v)
		if !told && (missed || last != nil && !maps.Equal(last, v)) || gap != "" && gap != lastGap {
			changed()
		}
		missed, last, lastGap = false, v, gap
	}
	poll(false)
	for ctx.Err() == nil {
		sub := p.st.rdb.Subscribe(ctx, p.channel())
		p.listen(ctx, sub, poll, changed)
		_ = sub.Close()
	}
}

// listen serves one subscription until it fails or ctx ends.
func (p *Pins) listen(ctx context.Context, sub *redis.PubSub, poll func(told bool), changed func()) {
	up := false
	lastPoll := time.Now()
	for ctx.Err() == nil {
		wait := pollEvery
		if up {
			wait = quietPollEvery
		}
		msg, err := sub.ReceiveTimeout(ctx, wait)
		switch msg.(type) {
		case *redis.Subscription:
			// (Re)subscribed: what changed while it was down is read now.
			up = true
			poll(false)
			lastPoll = time.Now()
			continue
		case *redis.Message:
			// The versions are read before the gateway is told, not
			// after: a change written between the two (one whose message
			// was lost) would otherwise be taken into last unseen, and
			// no later poll would tell of it. Read first, anything after
			// the read differs at the next poll.
			poll(true)
			changed()
			lastPoll = time.Now()
			continue
		}
		var netErr interface{ Timeout() bool }
		if errors.As(err, &netErr) && netErr.Timeout() {
			if time.Since(lastPoll) >= wait {
				poll(false)
				lastPoll = time.Now()
			}
			continue
		}
		if err != nil {
			// The subscription dropped (Redis went away): poll until a
			// new one is made. The next Receive redials.
			up = false
			_ = p.st.Check(err)
			if ctx.Err() != nil {
				return
			}
			poll(false)
			lastPoll = time.Now()
			select {
			case <-ctx.Done():
			case <-time.After(pollEvery):
			}
			return
		}
	}
}
