package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// The audit chain (see store's package doc) is linked in the transaction
// that appends an entry, which bbolt runs one at a time, so every entry
// links to the one committed before it.
//
//	auditchain  "head" → store.AuditLink (JSON) of the newest entry
//	auditcps    be64(seq) → store.AuditCheckpoint (JSON), oldest first
var (
	bktAuditChain       = []byte("auditchain")
	bktAuditCheckpoints = []byte("auditcps")
	keyHead             = []byte("head")
)

// appendAudit appends a inside tx, linked to the chain's head: it takes
// the thread and working directory of a's session when a names none, and
// the next sequence number, the head's hash as Prev, and its own Hash.
func appendAudit(tx *bolt.Tx, a store.AuditEntry) error {
	noThread := a.Channel == "" && a.ThreadTS == ""
	if a.SessionID != "" && (noThread || a.WorkDir == "") {
		if sess, err := getSession(tx, a.SessionID); err == nil {
			if noThread {
				a.Channel, a.ThreadTS = sess.Thread.Channel, sess.Thread.TS
			}
			a.WorkDir = cmp.Or(a.WorkDir, sess.WorkDir)
		}
	}
	_, digest, err := store.AuditBody(a)
	if err != nil {
		return err
	}
	head, err := auditHead(tx)
	if err != nil {
		return err
	}
	a.Seq, a.Prev = head.Seq+1, head.Hash
	if a.Hash, err = store.AuditLinkHash(a.Seq, a.Prev, digest); err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	b := tx.Bucket(bktAudit)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	a.ID = seqID(n)
	if err := putJSON(b, be64(n), a); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bktAuditChain), keyHead, store.AuditLink{Seq: a.Seq, Hash: a.Hash, Entry: a.ID})
}

// auditHead reads the chain's head: the origin (seq 0, AuditGenesis)
// before the first entry.
func auditHead(tx *bolt.Tx) (store.AuditLink, error) {
	head := store.AuditLink{Hash: store.AuditGenesis}
	if _, err := getJSON(tx.Bucket(bktAuditChain), keyHead, &head); err != nil {
		return head, err
	}
	return head, nil
}

// AuditHead implements store.AuditChain.
func (s *Store) AuditHead(ctx context.Context) (store.AuditLink, error) {
	var head store.AuditLink
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		head, err = auditHead(tx)
		return err
	})
	if err != nil {
		return store.AuditLink{}, fmt.Errorf("boltstore: audit head: %w", err)
	}
	if head.Seq == 0 {
		return store.AuditLink{}, nil
	}
	return head, nil
}

// LastAuditCheckpoint implements store.AuditChain.
func (s *Store) LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error) {
	var cp store.AuditCheckpoint
	err := s.view(ctx, func(tx *bolt.Tx) error {
		_, v := tx.Bucket(bktAuditCheckpoints).Cursor().Last()
		if v == nil {
			return store.ErrNotFound
		}
		return jsonUnmarshal(v, &cp)
	})
	if err != nil {
		return cp, fmt.Errorf("boltstore: last audit checkpoint: %w", err)
	}
	return cp, nil
}

// AuditCheckpoints implements store.AuditChain.
func (s *Store) AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error) {
	var out []store.AuditCheckpoint
	err := s.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bktAuditCheckpoints).Cursor()
		for k, v := c.Seek(be64(from)); k != nil; k, v = c.Next() {
			var cp store.AuditCheckpoint
			if err := jsonUnmarshal(v, &cp); err != nil {
				return err
			}
			out = append(out, cp)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: audit checkpoints: %w", err)
	}
	return out, nil
}

// PutAuditCheckpoint implements store.AuditChain.
func (s *Store) PutAuditCheckpoint(ctx context.Context, cp store.AuditCheckpoint, prev uint64) error {
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("boltstore: put audit checkpoint: %w", err)
	}
	if cp.Seq <= prev && !cp.Reset {
		return fmt.Errorf("boltstore: put audit checkpoint at %d: %w: not past the one at %d", cp.Seq, store.ErrInvalid, prev)
	}
	n, err := parseSeqID(cp.Entry)
	if err != nil {
		return fmt.Errorf("boltstore: put audit checkpoint at %d: entry: %w", cp.Seq, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: put audit checkpoint at %d: %w", cp.Seq, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		cps := tx.Bucket(bktAuditCheckpoints)
		var last uint64
		if k, _ := cps.Cursor().Last(); k != nil {
			last = binary.BigEndian.Uint64(k)
		}
		if last != prev {
			return fmt.Errorf("%w: the newest checkpoint is at %d, not %d", store.ErrExists, last, prev)
		}
		var e store.AuditEntry
		found, err := getJSON(tx.Bucket(bktAudit), be64(n), &e)
		if err != nil {
			return err
		}
		if !found || e.Seq != cp.Seq || e.Hash != cp.Hash {
			return fmt.Errorf("%w: entry %s is not the chain's entry %d with hash %s", store.ErrInvalid, cp.Entry, cp.Seq, cp.Hash)
		}
		if cp.Reset {
			if err := dropCheckpointsBefore(tx, math.MaxUint64); err != nil {
				return err
			}
		}
		return putJSON(cps, be64(cp.Seq), cp)
	})
	if err != nil {
		return fmt.Errorf("boltstore: put audit checkpoint at %d: %w", cp.Seq, err)
	}
	return nil
}

// auditCut is how far retention may trim the audit log when every entry up
// to the bucket key upTo is due: up to the newest checkpoint whose entry
// is at or before upTo (the kept part verifies from it). It returns that
// entry's bucket key and the checkpoint's seq; zeros when no checkpoint
// qualifies, and nothing may go.
func auditCut(tx *bolt.Tx, upTo uint64) (cut, anchor uint64, err error) {
	c := tx.Bucket(bktAuditCheckpoints).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var cp store.AuditCheckpoint
		if err := jsonUnmarshal(v, &cp); err != nil {
			return 0, 0, err
		}
		n, err := parseSeqID(cp.Entry)
		if err != nil {
			return 0, 0, err
		}
		if n > upTo {
			break
		}
		cut, anchor = n, cp.Seq
	}
	return cut, anchor, nil
}

// dropCheckpointsBefore deletes the checkpoints older than seq, the one
// the kept part of the log now starts from.
func dropCheckpointsBefore(tx *bolt.Tx, seq uint64) error {
	c := tx.Bucket(bktAuditCheckpoints).Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, be64(seq)) < 0; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// view runs fn in a read transaction unless ctx has ended.
func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}
