package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sessions is the table of the streamable HTTP sessions (MCP 2025-11-25
// and older) that every replica of a team's gateway shares: a session one
// replica issued is accepted by all of them, still bound to the principal
// that opened it, and what the gateway keeps per session (the fields: the
// client's capabilities, its log level, the tools it revealed, its
// resource subscriptions) is found by whichever replica a request lands on.
//
// Why a shared table rather than a signed or encrypted session id (the
// pattern agentgateway and Envoy use, which needs no Redis round trip):
//
//   - An ended session must be refused by every replica. A DELETE, an idle
//     expiry or an eviction has to reach all of them, and a self-contained
//     id stays valid until it expires unless every replica consults a
//     shared list of revoked ids: a shared store again, only inverted.
//   - What is kept per session changes during the session (tool_search
//     adds to the reveal set, logging/setLevel, resources/subscribe). An id
//     cannot change after initialize, so those would need a shared store
//     anyway, or a new id per change, which MCP has no way to hand out.
//   - serve.max_sessions and serve.session_idle_timeout need to know which
//     sessions exist and when each was last used; a self-contained id
//     knows neither.
//   - A signing key shared by every replica is one more secret to
//     distribute and rotate, and whoever holds it can mint sessions for
//     anyone; the table has no such key.
//
// The cost is one Redis round trip per request on a session (a script
// that checks the principal, refreshes the idle TTL and returns the
// fields), and no session works while Redis is down ([ErrUnavailable]).
// MCP 2026-07-28 requests have no sessions and never wait on it.
//
// Keys: Key("session", h) is a hash per session, where h is the SHA-256 of
// the session id (so a copy of Redis's data holds no usable session id),
// with the field "p" (the principal) and the gateway's own fields; it
// expires after the idle timeout, refreshed on every use. Key("session",
// "lru") is a sorted set of every h by its last use, for max_sessions.
type Sessions struct {
	st   *Store
	idle time.Duration // 0: sessions never expire by themselves
	max  int           // 0: no bound
}

// ErrNoSession is why a session id is refused: never issued, ended,
// expired, evicted, or another principal's. It does not say which: a
// client must not learn that someone else's id exists.
var ErrNoSession = errors.New("unknown or terminated session")

// Sessions returns the shared session table: sessions expire after idle
// without a request (0: never), and at most max live at once (0: no
// bound); opening one more ends the least recently used.
func (s *Store) Sessions(idle time.Duration, max int) *Sessions {
	return &Sessions{st: s, idle: idle, max: max}
}

// principalField is the hash field holding the session's principal; the
// gateway's own fields must not use it.
const principalField = "p"

// lruKey is the sorted set of sessions by last use.
func (t *Sessions) lruKey() string { return t.st.Key("session", "lru") }

// member is how a session id appears in Redis: its SHA-256, never the id.
func member(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

func (t *Sessions) key(id string) string { return t.st.Key("session", member(id)) }

func (t *Sessions) ttlMillis() int64 { return t.idle.Milliseconds() }

// The scripts take the time from Redis (TIME), not from the replica, so
// that replicas whose clocks differ still agree on which session was used
// last. They name the session keys they evict from ARGV (the prefix plus
// the member): that is fine for one Redis or Valkey server and its
// replicas, not for Redis Cluster, which toolbridge does not support.

// createScript drops the sessions idle for longer than the TTL from the
// LRU set, evicts the least recently used ones until one more fits under
// max, and creates the session.
// KEYS: session hash, LRU set. ARGV: principal, ttl ms, member, max, session key prefix.
var createScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local max = tonumber(ARGV[4])
if ttl > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl) end
local evicted = 0
if max > 0 then
  local n = redis.call('ZCARD', KEYS[2])
  while n >= max do
    local old = redis.call('ZPOPMIN', KEYS[2])
    if #old == 0 then break end
    redis.call('DEL', ARGV[5] .. old[1])
    evicted = evicted + 1
    n = n - 1
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'p', ARGV[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('ZADD', KEYS[2], now, ARGV[3])
return evicted
`)

// Create records a new session id for principal, evicting the least
// recently used sessions when max are live. It returns how many were
// evicted. The id must be unguessable (the caller makes it).
func (t *Sessions) Create(ctx context.Context, id, principal string) (evicted int, err error) {
	n, err := createScript.Run(ctx, t.st.rdb, []string{t.key(id), t.lruKey()},
		principal, t.ttlMillis(), member(id), t.max, t.st.Key("session", "")).Int()
	if err := t.st.Check(err); err != nil {
		return 0, fmt.Errorf("creating a shared session: %w", err)
	}
	return n, nil
}

// touchScript checks that the session exists and is the principal's,
// refreshes its idle TTL and its place in the LRU set, and returns its
// fields; nil (false) when it is not the principal's live session.
// KEYS: session hash, LRU set. ARGV: principal, ttl ms, member.
var touchScript = redis.NewScript(`
local p = redis.call('HGET', KEYS[1], 'p')
if (not p) or p ~= ARGV[1] then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(ARGV[2]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
redis.call('ZADD', KEYS[2], now, ARGV[3])
return redis.call('HGETALL', KEYS[1])
`)

// Touch checks that id is a live session of principal, counts it as used
// now (its idle expiry starts again) and returns the fields the gateway
// keeps for it. It returns [ErrNoSession] for any other id, and an error
// wrapping [ErrUnavailable] when Redis cannot say.
func (t *Sessions) Touch(ctx context.Context, id, principal string) (map[string]string, error) {
	res, err := touchScript.Run(ctx, t.st.rdb, []string{t.key(id), t.lruKey()},
		principal, t.ttlMillis(), member(id)).StringSlice()
	if errors.Is(err, redis.Nil) {
		_ = t.st.Check(nil) // Redis answered
		return nil, ErrNoSession
	}
	if err := t.st.Check(err); err != nil {
		return nil, fmt.Errorf("checking a shared session: %w", err)
	}
	fields := make(map[string]string, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		if res[i] != principalField {
			fields[res[i]] = res[i+1]
		}
	}
	return fields, nil
}

// setScript sets fields of a session only if it still exists: a field
// written after the session ended must not bring back a session without
// a principal or a TTL.
// KEYS: session hash. ARGV: field, value, field, value…
var setScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`)

// Set stores fields of a live session. A session that has ended is left
// alone and gives [ErrNoSession].
func (t *Sessions) Set(ctx context.Context, id string, fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		if k == principalField {
			return fmt.Errorf("setting session field %q: the name is reserved for the principal", k)
		}
		args = append(args, k, v)
	}
	n, err := setScript.Run(ctx, t.st.rdb, []string{t.key(id)}, args...).Int()
	if err := t.st.Check(err); err != nil {
		return fmt.Errorf("storing a shared session's state: %w", err)
	}
	if n == 0 {
		return ErrNoSession
	}
	return nil
}

// addScript adds values to a field holding a JSON list of strings, keeps
// the last limit of them, and returns whether it changed and the list.
// A field that does not decode is replaced: it holds only what the
// gateway wrote.
// KEYS: session hash. ARGV: field, limit, value…
var addScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local list = {}
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local ok, v = pcall(cjson.decode, cur)
  if ok and type(v) == 'table' then
    for _, x in ipairs(v) do
      if type(x) == 'string' then table.insert(list, x) end
    end
  end
end
local have = {}
for _, x in ipairs(list) do have[x] = true end
local changed = 0
for i = 3, #ARGV do
  if not have[ARGV[i]] then
    have[ARGV[i]] = true
    table.insert(list, ARGV[i])
    changed = 1
  end
end
local limit = tonumber(ARGV[2])
if limit > 0 and #list > limit then
  local kept = {}
  for i = #list - limit + 1, #list do table.insert(kept, list[i]) end
  list = kept
end
local enc = '[]'
if #list > 0 then enc = cjson.encode(list) end
if changed == 1 then redis.call('HSET', KEYS[1], ARGV[1], enc) end
return {changed, enc}
`)

// AddToList adds values to a session field that holds a JSON list of
// strings (the reveal set), keeping the last limit of them (0: all), in
// one step in Redis: two replicas adding to the same session's list at
// once both keep their values, where a read and a write of the whole list
// let the later writer drop the other's. It returns the list as stored,
// and whether it changed. A session that has ended gives [ErrNoSession].
func (t *Sessions) AddToList(ctx context.Context, id, field string, limit int, values []string) (list []string, changed bool, err error) {
	if field == principalField {
		return nil, false, fmt.Errorf("adding to session field %q: the name is reserved for the principal", field)
	}
	args := make([]any, 0, 2+len(values))
	args = append(args, field, limit)
	for _, v := range values {
		args = append(args, v)
	}
	res, err := addScript.Run(ctx, t.st.rdb, []string{t.key(id)}, args...).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, false, ErrNoSession
	}
	if err := t.st.Check(err); err != nil {
		return nil, false, fmt.Errorf("adding to a shared session's list: %w", err)
	}
	if len(res) != 2 {
		return nil, false, fmt.Errorf("adding to a shared session's list: unexpected answer %v", res)
	}
	n, _ := res[0].(int64)
	enc, _ := res[1].(string)
	if err := json.Unmarshal([]byte(enc), &list); err != nil {
		return nil, false, fmt.Errorf("adding to a shared session's list: decoding it: %w", err)
	}
	return list, n == 1, nil
}

// End ends a session on every replica (DELETE, or the gateway's own
// decision). Ending a session that does not exist is not an error.
func (t *Sessions) End(ctx context.Context, id string) error {
	_, err := t.st.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, t.key(id))
		p.ZRem(ctx, t.lruKey(), member(id))
		return nil
	})
	if err := t.st.Check(err); err != nil {
		return fmt.Errorf("ending a shared session: %w", err)
	}
	return nil
}

// Exists reports whether id is a live session (of anyone), without
// counting it as used: a replica asks it to let go of what it keeps
// locally for sessions that ended elsewhere.
func (t *Sessions) Exists(ctx context.Context, id string) (bool, error) {
	n, err := t.st.rdb.Exists(ctx, t.key(id)).Result()
	if err := t.st.Check(err); err != nil {
		return false, fmt.Errorf("checking a shared session: %w", err)
	}
	return n == 1, nil
}

// lenScript drops the LRU entries idle for longer than the TTL and
// counts the rest. KEYS: LRU set. ARGV: ttl ms.
var lenScript = redis.NewScript(`
local ttl = tonumber(ARGV[1])
if ttl > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
end
return redis.call('ZCARD', KEYS[1])
`)

// Len is the number of live sessions, for metrics and the status page. A
// session that expired a moment ago may still count.
func (t *Sessions) Len(ctx context.Context) (int, error) {
	n, err := lenScript.Run(ctx, t.st.rdb, []string{t.lruKey()}, t.ttlMillis()).Int()
	if err := t.st.Check(err); err != nil {
		return 0, fmt.Errorf("counting shared sessions: %w", err)
	}
	return n, nil
}
