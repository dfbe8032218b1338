package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// Replies of approveRequestScript.
const (
	approveNotFound = 0
	approveCounted  = 1
	approveTooLate  = 2
	approveChanged  = 3
)

// approveRequestScript records one approval of a pending request that needs
// several (store.Approvals.Approve): the approvals field is a JSON array
// the script appends to as text (Go wrote each element), and approves is
// the canonical input the first approval approved, which every later one
// must equal. Who approved is counted from the array itself, each person
// once: a copy of an approval written into it by someone else counts for
// no one more, and an array that does not decode counts for nobody (it is
// replaced). Fields approvals_n and approver:<user id>, which older
// versions kept, are neither read nor written.
//
// KEYS[1] request hash
// ARGV[1] approver's user id  ARGV[2] the approval's JSON
// ARGV[3] approvals needed    ARGV[4] the canonical input it approves
//
// Returns {0} for an unknown id (ErrNotFound); {2, body, card, decision}
// when settled (ErrAlreadyDecided); {3} when it approves another input
// (ErrInputChanged); otherwise {1, n, last}: n people approved now, last 1
// when this call made them ARGV[3]. A person who approved already, or an
// approval once ARGV[3] people are in, changes nothing (last 0).
var approveRequestScript = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision', 'approvals', 'approves')
if not f[1] then
	return {0}
end
if f[3] then
	return {2, f[1], f[2] or '', f[3]}
end
local n, people = 0, {}
local ok, list = false, nil
if f[4] then
	ok, list = pcall(cjson.decode, f[4])
end
if ok and type(list) == 'table' then
	for _, a in ipairs(list) do
		local by = type(a) == 'table' and a['by'] or nil
		if type(by) == 'string' and not people[by] then
			people[by] = true
			n = n + 1
		end
	end
else
	ok = false
end
if people[ARGV[1]] or n >= tonumber(ARGV[3]) then
	return {1, n, 0}
end
if n > 0 and f[5] ~= ARGV[4] then
	return {3}
end
local text = '[' .. ARGV[2] .. ']'
if ok and #list > 0 then
	text = string.sub(f[4], 1, -2) .. ',' .. ARGV[2] .. ']'
end
if n == 0 then
	redis.call('HSET', KEYS[1], 'approves', ARGV[4])
end
n = n + 1
redis.call('HSET', KEYS[1], 'approvals', text)
local last = 0
if n == tonumber(ARGV[3]) then
	last = 1
end
return {1, n, last}
`)

// Approve implements store.Approvals with one script on the request's hash
// (approveRequestScript), then reads the request back for its approvals.
func (s *Store) Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error) {
	if err := store.ValidateApprove(a, need); err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	aJSON, err := json.Marshal(a)
	if err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	res, err := s.run(ctx, approveRequestScript, []string{s.keys.request(id)}, a.By, aJSON, need, a.Approves()).Slice()
	if err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	str := func(i int) string { return replyString(res, i) }
	code, _ := res[0].(int64)
	switch code {
	case approveCounted:
		last, _ := res[2].(int64)
		r, err := s.GetRequest(ctx, id)
		if err != nil {
			return r, false, fmt.Errorf("redisstore: approve %s: counted, but %w", id, err)
		}
		return r, last == 1, nil
	case approveTooLate:
		r, err := decodeRequest(id, str(1), str(2), str(3))
		if err != nil {
			return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
		}
		return r, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrAlreadyDecided)
	case approveChanged:
		r, err := s.GetRequest(ctx, id)
		if err != nil {
			return r, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
		}
		return r, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrInputChanged)
	}
	return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrNotFound)
}
