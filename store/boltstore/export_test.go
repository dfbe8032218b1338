package boltstore

import bolt "go.etcd.io/bbolt"

// SetTrimEvery changes how often the event log is trimmed until the returned
// func restores it.
func SetTrimEvery(n uint64) (restore func()) {
	old := trimEvery
	trimEvery = n
	return func() { trimEvery = old }
}

// EventIDs lists the ids of the events left in the log.
func (s *Store) EventIDs() ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktEvents).ForEach(func(_, v []byte) error {
			var e struct{ ID string }
			if err := jsonUnmarshal(v, &e); err != nil {
				return err
			}
			ids = append(ids, e.ID)
			return nil
		})
	})
	return ids, err
}
