package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// The audit chain (see store's package doc) is linked by the script that
// appends an entry, in the global slot with the stream, the chain's head
// and its checkpoints, so every append of every process, on one server or
// a cluster, links to the entry appended before it: one slot, one order.
//
// Redis's Lua has no SHA-256, so chainLua carries one: only its
// compression function, run once per append. Go hashes the first half of
// the link (the domain and the entry's digest, which it knows) and passes
// SHA-256's state after that block (store.AuditLinkMidstate); the script
// finishes with the block it alone knows: the sequence number, the head's
// hash and the padding. TestLuaLinkMatchesGo checks it against Go's
// crypto/sha256 on many inputs, BenchmarkAuditAppend measures what it
// costs.
//
// Retention cuts the stream only at a checkpoint: the checkpoints are a
// sorted set scored by seq whose members are "<entry id> <JSON>", so the
// script reads the oldest two and their entries' times without decoding
// JSON. Once the second oldest's entry is older than the audit retention,
// the oldest goes and the stream is trimmed up to the second's entry; one
// step per append.

// chainLua is prepended to every script that appends an audit entry. It
// defines appendAudit(stream, head, checkpoints, body, midstate, cutoff),
// which appends body linked to the head, moves the head, trims what
// retention allows (cutoff: unix ms, "0" keeps all), and returns the
// entry's id; and trimAudit(stream, checkpoints, cutoff). The stream
// entry's fields: a (the entry's JSON without chain fields), n (seq),
// p (prev), h (hash); the head's: n, h, id.
const chainLua = `
local band, bor, bxor, ror, rshift, tobit, tohex = bit.band, bit.bor, bit.bxor, bit.ror, bit.rshift, bit.tobit, bit.tohex
local K = {
0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,
0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,
0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,
0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,
0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,
0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,
0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,
0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2}

local function words(hex, n)
	local w = {}
	for i = 1, n do
		w[i] = tonumber(string.sub(hex, i * 8 - 7, i * 8), 16)
	end
	return w
end

-- auditLink finishes SHA-256 of a link from the state after its first
-- block (mid, hex): the second block is seq (8 bytes), prev (32 bytes),
-- then the padding of a 104-byte message.
local function auditLink(mid, prev, seq)
	local W = words(prev, 8)
	table.insert(W, 1, seq % 4294967296)
	table.insert(W, 1, math.floor(seq / 4294967296))
	W[11], W[12], W[13], W[14], W[15], W[16] = 0x80000000, 0, 0, 0, 0, 832
	for j = 17, 64 do
		local w15, w2 = W[j - 15], W[j - 2]
		W[j] = tobit(W[j - 16] + bxor(ror(w15, 7), ror(w15, 18), rshift(w15, 3)) + W[j - 7]
			+ bxor(ror(w2, 17), ror(w2, 19), rshift(w2, 10)))
	end
	local H = words(mid, 8)
	local a, b, c, d, e, f, g, h = H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
	for j = 1, 64 do
		local t1 = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g))) + K[j] + W[j]
		local t2 = bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + bor(band(a, b), band(c, bor(a, b)))
		h, g, f, e, d, c, b, a = g, f, e, tobit(d + t1), c, b, a, tobit(t1 + t2)
	end
	local out = {a, b, c, d, e, f, g, h}
	for i = 1, 8 do
		out[i] = tohex(tobit(H[i] + out[i]), 8)
	end
	return table.concat(out)
end

local function entryMs(member)
	return tonumber(string.match(member, '^(%d+)%-'))
end

local function trimAudit(stream, cps, cutoff)
	if cutoff == '0' then
		return
	end
	local cut = tonumber(cutoff)
	local two = redis.call('ZRANGE', cps, 0, 1)
	local anchor = two[1]
	if two[2] and entryMs(two[2]) < cut then
		redis.call('ZREM', cps, two[1])
		anchor = two[2]
	end
	if anchor and entryMs(anchor) < cut then
		local ms, n = string.match(anchor, '^(%d+)%-(%d+) ')
		redis.call('XTRIM', stream, 'MINID', ms .. '-' .. string.format('%.0f', tonumber(n) + 1))
	end
end

local function appendAudit(stream, head, cps, body, mid, cutoff)
	local cur = redis.call('HMGET', head, 'n', 'h')
	local seq = tonumber(cur[1] or '0') + 1
	local prev = cur[2] or string.rep('0', 64)
	local hash = auditLink(mid, prev, seq)
	local n = string.format('%.0f', seq)
	local id = redis.call('XADD', stream, '*', 'a', body, 'n', n, 'p', prev, 'h', hash)
	redis.call('HSET', head, 'n', n, 'h', hash, 'id', id)
	trimAudit(stream, cps, cutoff)
	return id
end
`

// auditArgs is what a script needs to append entry a: its JSON and the
// midstate of its link.
func auditArgs(a store.AuditEntry) (body []byte, midstate string, err error) {
	body, digest, err := store.AuditBody(a)
	if err != nil {
		return nil, "", err
	}
	midstate, err = store.AuditLinkMidstate(digest)
	return body, midstate, err
}

// chainKeys are the keys appendAudit takes after the stream.
func (s *Store) chainKeys() []string {
	return []string{s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints()}
}

// where is where a session's audit entries happened: its thread and
// working directory.
type where struct{ channel, ts, workdir string }

// whereOf reads where from a session's JSON (zero for none or a session
// that is gone).
func whereOf(raw []byte) where {
	var sess struct {
		Thread  store.MessageRef `json:"thread"`
		WorkDir string           `json:"workdir"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &sess) != nil {
		return where{}
	}
	return where{sess.Thread.Channel, sess.Thread.TS, sess.WorkDir}
}

// fill gives a the thread and working directory it does not name.
func (w where) fill(a *store.AuditEntry) {
	if a.Channel == "" && a.ThreadTS == "" {
		a.Channel, a.ThreadTS = w.channel, w.ts
	}
	if a.WorkDir == "" {
		a.WorkDir = w.workdir
	}
}

// encode is a request's thread field: "<channel> <ts> <workdir>" (a
// request stored before the working directory was kept has only the
// first two).
func (w where) encode() string {
	if w == (where{}) {
		return ""
	}
	return w.channel + " " + w.ts + " " + w.workdir
}

func decodeWhere(v string) where {
	var w where
	w.channel, v, _ = strings.Cut(v, " ")
	w.ts, w.workdir, _ = strings.Cut(v, " ")
	return w
}

// sessionWhere reads where a session is for an entry appended on its
// own; zero when it is gone.
func (s *Store) sessionWhere(ctx context.Context, sessionID string) (where, error) {
	if sessionID == "" {
		return where{}, nil
	}
	raw, err := s.rdb.Get(ctx, s.keys.session(sessionID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return where{}, nil
	}
	if err != nil {
		return where{}, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	return whereOf(raw), nil
}

// appendAuditScript appends an entry no transition writes (AppendAudit).
//
// KEYS[1] audit stream   KEYS[2] chain head     KEYS[3] checkpoints
// ARGV[1] entry JSON     ARGV[2] link midstate  ARGV[3] audit cutoff (unix ms; "0" keeps all)
//
// Returns the entry's stream id.
var appendAuditScript = redis.NewScript(chainLua + `
return appendAudit(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
`)

// AppendAudit implements store.Store: the entry takes its session's
// thread, then one script links and appends it.
func (s *Store) AppendAudit(ctx context.Context, a store.AuditEntry) error {
	if a.At.IsZero() {
		a.At = time.Now()
	}
	if err := a.ValidateAppend(); err != nil {
		return fmt.Errorf("redisstore: append audit: %w", err)
	}
	if a.Channel == "" && a.ThreadTS == "" || a.WorkDir == "" {
		w, err := s.sessionWhere(ctx, a.SessionID)
		if err != nil {
			return fmt.Errorf("redisstore: append audit: %w", err)
		}
		w.fill(&a)
	}
	body, mid, err := auditArgs(a)
	if err != nil {
		return fmt.Errorf("redisstore: append audit: %w", err)
	}
	if err := s.run(ctx, appendAuditScript, s.chainKeys(), body, mid, s.auditCutoff()).Err(); err != nil {
		return fmt.Errorf("redisstore: append audit: %w", err)
	}
	return nil
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	var msgs []redis.XMessage
	var err error
	if limit > 0 {
		msgs, err = s.rdb.XRangeN(ctx, s.keys.audit(), start, "+", int64(limit)).Result()
	} else {
		msgs, err = s.rdb.XRange(ctx, s.keys.audit(), start, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: audit log after %q: %w", after, err)
	}
	out := make([]store.AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		str := func(f string) string { v, _ := m.Values[f].(string); return v }
		var a store.AuditEntry
		if err := json.Unmarshal([]byte(str("a")), &a); err != nil {
			return nil, fmt.Errorf("redisstore: audit log: entry %s: %w", m.ID, err)
		}
		a.ID, a.Prev, a.Hash = m.ID, str("p"), str("h")
		if n := str("n"); n != "" {
			if a.Seq, err = strconv.ParseUint(n, 10, 64); err != nil {
				return nil, fmt.Errorf("redisstore: audit log: entry %s: seq %q: %w", m.ID, n, err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// AuditHead implements store.AuditChain.
func (s *Store) AuditHead(ctx context.Context) (store.AuditLink, error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.auditHead(), "n", "h", "id").Result()
	if err != nil {
		return store.AuditLink{}, fmt.Errorf("redisstore: audit head: %w", err)
	}
	str := func(i int) string { v, _ := vals[i].(string); return v }
	if str(0) == "" {
		return store.AuditLink{}, nil
	}
	seq, err := strconv.ParseUint(str(0), 10, 64)
	if err != nil {
		return store.AuditLink{}, fmt.Errorf("redisstore: audit head: seq %q: %w", str(0), err)
	}
	return store.AuditLink{Seq: seq, Hash: str(1), Entry: str(2)}, nil
}

// checkpointMember is a checkpoint as the sorted set holds it.
func checkpointMember(cp store.AuditCheckpoint) (string, error) {
	raw, err := json.Marshal(cp)
	if err != nil {
		return "", err
	}
	return cp.Entry + " " + string(raw), nil
}

func decodeCheckpoint(member string) (store.AuditCheckpoint, error) {
	var cp store.AuditCheckpoint
	_, raw, ok := strings.Cut(member, " ")
	if !ok {
		return cp, fmt.Errorf("checkpoint %.40q: no JSON", member)
	}
	if err := json.Unmarshal([]byte(raw), &cp); err != nil {
		return cp, fmt.Errorf("checkpoint %.40q: %w", member, err)
	}
	return cp, nil
}

// LastAuditCheckpoint implements store.AuditChain.
func (s *Store) LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error) {
	members, err := s.rdb.ZRevRange(ctx, s.keys.auditCheckpoints(), 0, 0).Result()
	if err != nil {
		return store.AuditCheckpoint{}, fmt.Errorf("redisstore: last audit checkpoint: %w", err)
	}
	if len(members) == 0 {
		return store.AuditCheckpoint{}, fmt.Errorf("redisstore: last audit checkpoint: %w", store.ErrNotFound)
	}
	cp, err := decodeCheckpoint(members[0])
	if err != nil {
		return cp, fmt.Errorf("redisstore: last audit checkpoint: %w", err)
	}
	return cp, nil
}

// AuditCheckpoints implements store.AuditChain.
func (s *Store) AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error) {
	members, err := s.rdb.ZRangeByScore(ctx, s.keys.auditCheckpoints(), &redis.ZRangeBy{
		Min: strconv.FormatUint(from, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: audit checkpoints: %w", err)
	}
	out := make([]store.AuditCheckpoint, 0, len(members))
	for _, m := range members {
		cp, err := decodeCheckpoint(m)
		if err != nil {
			return nil, fmt.Errorf("redisstore: audit checkpoints: %w", err)
		}
		out = append(out, cp)
	}
	return out, nil
}

// streamID matches a stream entry's id.
var streamID = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// Replies of putCheckpointScript.
const (
	checkpointLate    = 0
	checkpointStored  = 1
	checkpointNoEntry = 2
)

// putCheckpointScript stores a checkpoint while the newest one is still
// the one the caller read, and only for the chain's entry it names.
//
// KEYS[1] checkpoints    KEYS[2] audit stream
// ARGV[1] member ("<entry id> <JSON>")          ARGV[2] seq
// ARGV[3] the newest checkpoint's seq the caller read (0: none)
// ARGV[4] the entry's id ARGV[5] its hash       ARGV[6] audit cutoff, as appendAudit's
// ARGV[7] "1" for a reset, which replaces every kept checkpoint, else "0"
//
// Returns {0, newest seq} when another checkpoint came first; {1} when
// stored; {2} when the stream holds no such entry with that seq and hash.
var putCheckpointScript = redis.NewScript(chainLua + `
local last = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local lastSeq = '0'
if last[2] then
	lastSeq = string.format('%.0f', tonumber(last[2]))
end
if lastSeq ~= ARGV[3] then
	return {0, lastSeq}
end
local e = redis.call('XRANGE', KEYS[2], ARGV[4], ARGV[4])
if #e == 0 then
	return {2}
end
local f, n, h = e[1][2], nil, nil
for i = 1, #f, 2 do
	if f[i] == 'n' then
		n = f[i + 1]
	elseif f[i] == 'h' then
		h = f[i + 1]
	end
end
if n ~= ARGV[2] or h ~= ARGV[5] then
	return {2}
end
if ARGV[7] == '1' then
	redis.call('DEL', KEYS[1])
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
trimAudit(KEYS[2], KEYS[1], ARGV[6])
return {1}
`)

// PutAuditCheckpoint implements store.AuditChain.
func (s *Store) PutAuditCheckpoint(ctx context.Context, cp store.AuditCheckpoint, prev uint64) error {
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("redisstore: put audit checkpoint: %w", err)
	}
	if (cp.Seq <= prev && !cp.Reset) || !streamID.MatchString(cp.Entry) {
		return fmt.Errorf("redisstore: put audit checkpoint at %d: %w: entry %q after the one at %d", cp.Seq, store.ErrInvalid, cp.Entry, prev)
	}
	member, err := checkpointMember(cp)
	if err != nil {
		return fmt.Errorf("redisstore: put audit checkpoint at %d: %w", cp.Seq, err)
	}
	res, err := s.run(ctx, putCheckpointScript, []string{s.keys.auditCheckpoints(), s.keys.audit()},
		member, strconv.FormatUint(cp.Seq, 10), strconv.FormatUint(prev, 10), cp.Entry, cp.Hash, s.auditCutoff(), resetArg(cp.Reset)).Slice()
	if err != nil {
		return fmt.Errorf("redisstore: put audit checkpoint at %d: %w", cp.Seq, err)
	}
	switch code, _ := res[0].(int64); code {
	case checkpointStored:
		return nil
	case checkpointLate:
		return fmt.Errorf("redisstore: put audit checkpoint at %d: %w: the newest is at %v, not %d", cp.Seq, store.ErrExists, res[1], prev)
	default:
		return fmt.Errorf("redisstore: put audit checkpoint at %d: %w: entry %s is not the chain's entry %d with hash %s", cp.Seq, store.ErrInvalid, cp.Entry, cp.Seq, cp.Hash)
	}
}

func resetArg(reset bool) string {
	if reset {
		return "1"
	}
	return "0"
}
