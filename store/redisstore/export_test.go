package redisstore

// Waiters reports how many WaitDecision calls are registered, so tests can
// act once a waiter is surely blocked.
func Waiters(s *Store) int {
	s.decisions.mu.Lock()
	defer s.decisions.mu.Unlock()
	n := 0
	for _, set := range s.decisions.waiters {
		n += len(set)
	}
	return n
}
