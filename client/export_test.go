package client

// WatchCounts returns how many of a watching session's synchronizes waited
// on its completion page alone, and how many asked the driver.
func WatchCounts(s *Session) (watched, asked uint64) {
	c := s.completionPage()
	if c == nil {
		return 0, 0
	}
	return c.watched.Load(), c.asked.Load()
}
