package mem

// EvictionsOverlapped reports the most evictions that were under way at
// once (their copies queued together on the eviction stream).
func (m *Manager) EvictionsOverlapped() int {
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	return m.outgoingPeak
}
