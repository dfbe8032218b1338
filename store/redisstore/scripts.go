package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// One Lua script per atomic step, in a var named for the step with the
// suffix Script, right above the method that runs it. Each documents what
// it does, its KEYS, its ARGV and its reply; a reply of more than two
// values is named by constants ("Replies of …"), and the Go caller maps a
// value that means "not found" or "taken" to the store sentinel. Scripts
// never build key names themselves: every key they touch arrives in KEYS,
// and all of a script's keys share one hash tag (one cluster slot; see
// keys.go for the groups and TestScriptKeysShareASlot). A transition
// spanning groups runs one script per group, in the order keys.go argues
// for. Every script runs through run, runIn or evalIn, which refuse keys
// of several slots (TestEveryScriptRunsThroughTheSlotCheck).

// run runs a script after checking its keys share a cluster slot.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if err := oneSlot(keys); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return script.Run(ctx, s.rdb, keys, args...)
}

// runIn queues a script, by its SHA, in a pipeline after checking its keys
// share a cluster slot, and returns its reply-to-be; see pipelineScripts
// for the pipeline's sending.
func (s *Store) runIn(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if err := oneSlot(keys); err != nil {
		return nil, err
	}
	return script.EvalSha(ctx, pipe, keys, args...), nil
}

// evalIn queues a script by its source (EVAL), after checking its keys
// share a cluster slot: for a small script in a pipeline beside another
// that is not safe to repeat, which a NOSCRIPT reply to this one would
// otherwise send again (see pipelineScripts).
func (s *Store) evalIn(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if err := oneSlot(keys); err != nil {
		return nil, err
	}
	return script.Eval(ctx, pipe, keys, args...), nil
}
