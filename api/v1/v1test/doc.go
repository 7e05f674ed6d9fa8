// Package v1test provides protocol fixtures for tests: one filled-in sample of
// every message type of api/v1, with every field non-zero where the protocol
// allows it, so that a round trip that drops or swaps a field is caught.
// It holds no state and no locks.
package v1test
