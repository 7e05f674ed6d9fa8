//go:build !wasip1

package sdk

import (
	"sync"
	"time"
)

var (
	testMu   sync.Mutex
	testHost Host = zeroHost{}
)

// SetHost sets what the host functions call outside WebAssembly (for unit
// tests of a policy's logic); nil restores a host that reads zero.
func SetHost(h Host) {
	testMu.Lock()
	defer testMu.Unlock()
	if h == nil {
		h = zeroHost{}
	}
	testHost = h
}

func host() Host {
	testMu.Lock()
	defer testMu.Unlock()
	return testHost
}

// zeroHost reads zero and has no maps.
type zeroHost struct{}

func (zeroHost) Now() time.Duration                { return 0 }
func (zeroHost) NumTenants() int                   { return 0 }
func (zeroHost) TenantName(Tenant) string          { return "" }
func (zeroHost) Class(Tenant) Class                { return 0 }
func (zeroHost) Weight(Tenant, Engine) int64       { return 1 }
func (zeroHost) MemoryShare(Tenant) uint64         { return 0 }
func (zeroHost) Sessions(Tenant) int               { return 0 }
func (zeroHost) Queued(Tenant, Engine) int         { return 0 }
func (zeroHost) InFlight(Tenant, Engine) int       { return 0 }
func (zeroHost) InFlightCost(Tenant, Engine) int64 { return 0 }
func (zeroHost) Usage(Tenant, Engine) int64        { return 0 }
func (zeroHost) HeadCost(Tenant, Engine) int64     { return 0 }
func (zeroHost) HeadSeq(Tenant, Engine) uint64     { return 0 }
func (zeroHost) EngineInFlight(Engine) int         { return 0 }
func (zeroHost) SliceTarget() time.Duration        { return 0 }
func (zeroHost) HighClassReserved() bool           { return false }
func (zeroHost) MapOpen(string, []int64) int32     { return 0 }
func (zeroHost) Log(string)                        {}
