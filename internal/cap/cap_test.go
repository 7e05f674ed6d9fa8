package cap

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// recorder collects cleanup calls in order.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) cleanup(name string) func() {
	return func() {
		r.mu.Lock()
		r.calls = append(r.calls, name)
		r.mu.Unlock()
	}
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) count(name string) int {
	n := 0
	for _, c := range r.got() {
		if c == name {
			n++
		}
	}
	return n
}

// before reports whether a's cleanup ran before b's.
func (r *recorder) before(a, b string) bool {
	ia, ib := -1, -1
	for i, c := range r.got() {
		if c == a && ia < 0 {
			ia = i
		}
		if c == b && ib < 0 {
			ib = i
		}
	}
	return ia >= 0 && ib >= 0 && ia < ib
}

func mustInsert(t *testing.T, tab *Table, kind Kind, obj any, parent Ref, rights Rights, cleanup func()) Handle {
	t.Helper()
	h, err := tab.Insert(kind, obj, parent, rights, cleanup)
	if err != nil {
		t.Fatalf("Insert(%v, %v): %v", kind, obj, err)
	}
	return h
}

func mustRef(t *testing.T, tab *Table, h Handle, kind Kind) Ref {
	t.Helper()
	r, err := tab.Ref(h, kind, 0)
	if err != nil {
		t.Fatalf("Ref(%#x, %v): %v", uint64(h), kind, err)
	}
	return r
}

func TestLookupRejects(t *testing.T) {
	sp := NewSpace()
	a, b := sp.NewTable(0), sp.NewTable(0)
	sess := mustInsert(t, a, KindSession, "sessA", Ref{}, AllSessionRights|AllBufferRights, nil)
	buf := mustInsert(t, a, KindBuffer, "buf", mustRef(t, a, sess, KindSession), RightBufferRead, nil)
	bSess := mustInsert(t, b, KindSession, "sessB", Ref{}, AllSessionRights, nil)

	revoked := mustInsert(t, a, KindStream, "revoked", mustRef(t, a, sess, KindSession), 0, nil)
	if err := a.Revoke(revoked); err != nil {
		t.Fatal(err)
	}
	stale := mustInsert(t, a, KindFence, "stale", Ref{}, 0, nil)
	if err := a.Release(stale); err != nil {
		t.Fatal(err)
	}
	reused := mustInsert(t, a, KindFence, "reused", Ref{}, 0, nil) // takes stale's slot
	if reused.index() != stale.index() {
		t.Fatalf("slot not reused: %d then %d", stale.index(), reused.index())
	}

	tests := []struct {
		name   string
		tab    *Table
		h      Handle
		kind   Kind
		need   Rights
		want   error
		wantV1 error
	}{
		{"ok", a, buf, KindBuffer, RightBufferRead, nil, nil},
		{"zero", a, 0, KindBuffer, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"forged tag", a, buf ^ 1, KindBuffer, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"forged index", a, buf + 1<<tagBits, KindBuffer, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"index out of range", a, Handle(uint64(MaxHandles) << tagBits), KindBuffer, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"stale generation", a, stale, KindFence, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"foreign table", b, buf, KindBuffer, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"foreign table, same index", a, bSess, KindSession, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"wrong kind", a, buf, KindProgram, 0, ErrInvalidHandle, v1.ErrInvalidHandle},
		{"revoked", a, revoked, KindStream, 0, ErrRevoked, v1.ErrRevoked},
		{"missing right", a, buf, KindBuffer, RightBufferWrite, ErrPermissionDenied, v1.ErrPermissionDenied},
		{"missing one of two", a, buf, KindBuffer, RightBufferRead | RightBufferWrite, ErrPermissionDenied, v1.ErrPermissionDenied},
		{"reused slot ok", a, reused, KindFence, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.tab.Lookup(tt.h, tt.kind, tt.need)
			if tt.want == nil {
				if err != nil || obj == nil {
					t.Fatalf("Lookup = %v, %v; want object", obj, err)
				}
				return
			}
			if obj != nil {
				t.Errorf("Lookup returned object %v with error", obj)
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, tt.wantV1) {
				t.Errorf("Lookup error = %v; want %v", err, tt.want)
			}
			if got, want := v1.CodeOf(err), v1.CodeOf(tt.want); got != want {
				t.Errorf("code = %v; want %v", got, want)
			}
			if _, err := tt.tab.Ref(tt.h, tt.kind, tt.need); !errors.Is(err, tt.want) {
				t.Errorf("Ref error = %v; want %v", err, tt.want)
			}
		})
	}
}

func TestHandlesAreNonzeroAndDistinct(t *testing.T) {
	sp := NewSpace()
	tab := sp.NewTable(0)
	seen := map[Handle]bool{}
	for i := range 2000 {
		h := mustInsert(t, tab, KindStream, i, Ref{}, 0, nil)
		if h == 0 || seen[h] {
			t.Fatalf("handle %d: %#x zero or repeated", i, uint64(h))
		}
		seen[h] = true
		if i%3 == 0 {
			if err := tab.Release(h); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestGet(t *testing.T) {
	sp := NewSpace()
	tab := sp.NewTable(0)
	h := mustInsert(t, tab, KindProgram, 42, Ref{}, RightLoad, nil)
	if v, err := Get[int](tab, h, KindProgram, RightLoad); err != nil || v != 42 {
		t.Errorf("Get[int] = %v, %v; want 42", v, err)
	}
	if _, err := Get[string](tab, h, KindProgram, 0); v1.CodeOf(err) != v1.CodeInternal {
		t.Errorf("Get[string] error = %v; want internal", err)
	}
	if _, err := Get[int](tab, h, KindKernel, 0); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("Get wrong kind error = %v; want invalid handle", err)
	}
}

// tree builds session A → buffer → grant, and session B → mapping (child of
// A's grant) → kernel-like grandchild in B, returning handles and a recorder.
type tree struct {
	sp                     *Space
	a, b                   *Table
	sessA, buf, grant      Handle
	sessB, mapping, mapKid Handle
	rec                    *recorder
}

func newTree(t *testing.T) *tree {
	t.Helper()
	tr := &tree{sp: NewSpace(), rec: &recorder{}}
	tr.a, tr.b = tr.sp.NewTable(0), tr.sp.NewTable(0)
	all := AllSessionRights | AllBufferRights
	tr.sessA = mustInsert(t, tr.a, KindSession, "sessA", Ref{}, all, tr.rec.cleanup("sessA"))
	tr.buf = mustInsert(t, tr.a, KindBuffer, "buf", mustRef(t, tr.a, tr.sessA, KindSession), AllBufferRights, tr.rec.cleanup("buf"))
	tr.grant = mustInsert(t, tr.a, KindGrant, "grant", mustRef(t, tr.a, tr.buf, KindBuffer), RightBufferRead|RightBufferWrite, tr.rec.cleanup("grant"))
	tr.sessB = mustInsert(t, tr.b, KindSession, "sessB", Ref{}, all, tr.rec.cleanup("sessB"))
	grantRef := mustRef(t, tr.a, tr.grant, KindGrant)
	tr.mapping = mustInsert(t, tr.b, KindMapping, "mapping", grantRef, RightBufferRead, tr.rec.cleanup("mapping"))
	tr.mapKid = mustInsert(t, tr.b, KindBuffer, "mapKid", mustRef(t, tr.b, tr.mapping, KindMapping), RightBufferRead, tr.rec.cleanup("mapKid"))
	return tr
}

func lookupErr(tab *Table, h Handle, kind Kind) error {
	_, err := tab.Lookup(h, kind, 0)
	return err
}

func TestRevokeCascadesAcrossTables(t *testing.T) {
	tr := newTree(t)
	if err := tr.a.Revoke(tr.buf); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tab  *Table
		h    Handle
		kind Kind
		want error
	}{
		{"buf", tr.a, tr.buf, KindBuffer, ErrRevoked},
		{"grant", tr.a, tr.grant, KindGrant, ErrRevoked},
		{"mapping in B", tr.b, tr.mapping, KindMapping, ErrRevoked},
		{"grandchild in B", tr.b, tr.mapKid, KindBuffer, ErrRevoked},
		{"session A untouched", tr.a, tr.sessA, KindSession, nil},
		{"session B untouched", tr.b, tr.sessB, KindSession, nil},
	} {
		if err := lookupErr(c.tab, c.h, c.kind); !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
			t.Errorf("%s: Lookup error = %v; want %v", c.name, err, c.want)
		}
	}
	for _, name := range []string{"buf", "grant", "mapping", "mapKid"} {
		if n := tr.rec.count(name); n != 1 {
			t.Errorf("cleanup %s ran %d times; want 1", name, n)
		}
	}
	for _, pair := range [][2]string{{"mapKid", "mapping"}, {"mapping", "grant"}, {"grant", "buf"}} {
		if !tr.rec.before(pair[0], pair[1]) {
			t.Errorf("cleanup %s did not run before %s: %v", pair[0], pair[1], tr.rec.got())
		}
	}
	// Revoked handles stay in their tables until released.
	if got := tr.b.Len(); got != 3 {
		t.Errorf("B holds %d handles; want 3 (revoked stay)", got)
	}
	// Revoking again is harmless and runs nothing twice.
	if err := tr.a.Revoke(tr.buf); err != nil {
		t.Errorf("second Revoke: %v", err)
	}
	if err := tr.b.Release(tr.mapping); err != nil {
		t.Errorf("Release of revoked mapping: %v", err)
	}
	if err := lookupErr(tr.b, tr.mapping, KindMapping); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("released mapping: error %v; want invalid handle", err)
	}
	if n := tr.rec.count("mapping"); n != 1 {
		t.Errorf("mapping cleanup ran %d times after release; want 1", n)
	}
	// No children can be derived from revoked objects.
	if _, err := tr.a.Insert(KindGrant, "g2", Ref{tr.a.slot(tr.buf)}, 0, nil); !errors.Is(err, ErrRevoked) {
		t.Errorf("Insert under revoked parent: %v; want revoked", err)
	}
}

func TestReleaseVersusRevoke(t *testing.T) {
	tr := newTree(t)
	if err := tr.a.Release(tr.grant); err != nil {
		t.Fatal(err)
	}
	// The released handle is gone; its descendants are revoked but present.
	if err := lookupErr(tr.a, tr.grant, KindGrant); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("released grant: %v; want invalid handle", err)
	}
	if err := lookupErr(tr.b, tr.mapping, KindMapping); !errors.Is(err, ErrRevoked) {
		t.Errorf("mapping after grant release: %v; want revoked", err)
	}
	if err := lookupErr(tr.a, tr.buf, KindBuffer); err != nil {
		t.Errorf("parent buffer after grant release: %v; want live", err)
	}
	if err := tr.a.Release(tr.grant); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("double release: %v; want invalid handle", err)
	}
	if err := tr.a.Revoke(tr.grant); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("revoke after release: %v; want invalid handle", err)
	}
	for name, want := range map[string]int{"grant": 1, "mapping": 1, "mapKid": 1, "buf": 0, "sessA": 0} {
		if got := tr.rec.count(name); got != want {
			t.Errorf("cleanup %s ran %d times; want %d", name, got, want)
		}
	}
}

func TestTableCloseReclaimsEverything(t *testing.T) {
	tr := newTree(t)
	tr.a.Close()
	if got := tr.a.Len(); got != 0 {
		t.Errorf("closed table holds %d handles", got)
	}
	for _, h := range []Handle{tr.sessA, tr.buf, tr.grant} {
		if _, err := tr.a.Rights(h); !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("handle %#x after close: %v; want invalid handle", uint64(h), err)
		}
	}
	if err := lookupErr(tr.b, tr.mapping, KindMapping); !errors.Is(err, ErrRevoked) {
		t.Errorf("B's mapping after A closed: %v; want revoked", err)
	}
	if err := lookupErr(tr.b, tr.sessB, KindSession); err != nil {
		t.Errorf("B's session after A closed: %v", err)
	}
	for _, name := range []string{"sessA", "buf", "grant", "mapping", "mapKid"} {
		if n := tr.rec.count(name); n != 1 {
			t.Errorf("cleanup %s ran %d times; want 1", name, n)
		}
	}
	if n := tr.rec.count("sessB"); n != 0 {
		t.Errorf("sessB cleanup ran %d times; want 0", n)
	}
	if !tr.rec.before("buf", "sessA") || !tr.rec.before("mapKid", "grant") {
		t.Errorf("children did not clean up before parents: %v", tr.rec.got())
	}
	if _, err := tr.a.Insert(KindSession, "late", Ref{}, 0, nil); !errors.Is(err, ErrClosed) || !errors.Is(err, v1.ErrRevoked) {
		t.Errorf("Insert after close: %v; want ErrClosed", err)
	}
	tr.a.Close() // idempotent
	tr.b.Close()
	if n := tr.rec.count("mapping"); n != 1 {
		t.Errorf("mapping cleanup ran %d times after both closed; want 1", n)
	}
	if n := tr.rec.count("sessB"); n != 1 {
		t.Errorf("sessB cleanup ran %d times; want 1", n)
	}
}

func TestRightsNarrowOnly(t *testing.T) {
	sp := NewSpace()
	tab := sp.NewTable(0)
	sess := mustInsert(t, tab, KindSession, "s", Ref{}, RightAlloc|RightCopy|RightBufferRead|RightBufferWrite, nil)
	sref := mustRef(t, tab, sess, KindSession)

	if _, err := tab.Insert(KindBuffer, "b", sref, RightBufferGrant, nil); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("child wider than parent: %v; want permission denied", err)
	}
	buf := mustInsert(t, tab, KindBuffer, "b", sref, RightBufferRead|RightBufferWrite, nil)

	tests := []struct {
		mask, wantSess, wantBuf Rights
	}{
		{AllRights, RightAlloc | RightCopy | RightBufferRead | RightBufferWrite, RightBufferRead | RightBufferWrite},
		{^RightBufferWrite, RightAlloc | RightCopy | RightBufferRead, RightBufferRead},
		{AllRights, RightAlloc | RightCopy | RightBufferRead, RightBufferRead}, // no widening back
		{RightCopy, RightCopy, 0},
	}
	for i, tt := range tests {
		got, err := tab.Restrict(sess, tt.mask)
		if err != nil || got != tt.wantSess {
			t.Errorf("%d: Restrict(%v) = %v, %v; want %v", i, tt.mask, got, err, tt.wantSess)
		}
		if r, _ := tab.Rights(buf); r != tt.wantBuf {
			t.Errorf("%d: buffer rights %v; want %v", i, r, tt.wantBuf)
		}
	}
	if _, err := tab.Lookup(buf, KindBuffer, RightBufferRead); !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("read after narrowing to none: %v; want permission denied", err)
	}
}

func TestQuota(t *testing.T) {
	sp := NewSpace()
	tab := sp.NewTable(3)
	var hs []Handle
	for i := range 3 {
		hs = append(hs, mustInsert(t, tab, KindStream, i, Ref{}, 0, nil))
	}
	if _, err := tab.Insert(KindStream, 3, Ref{}, 0, nil); !errors.Is(err, ErrQuotaExceeded) || !errors.Is(err, v1.ErrQuotaExceeded) {
		t.Fatalf("4th insert: %v; want quota exceeded", err)
	}
	// A revoked handle still occupies its slot; a released one frees it.
	if err := tab.Revoke(hs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Insert(KindStream, 3, Ref{}, 0, nil); !errors.Is(err, ErrQuotaExceeded) {
		t.Errorf("insert after revoke: %v; want quota exceeded", err)
	}
	if err := tab.Release(hs[0]); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tab, KindStream, 3, Ref{}, 0, nil)
}

func TestInsertBadArguments(t *testing.T) {
	sp, other := NewSpace(), NewSpace()
	tab, otab := sp.NewTable(0), other.NewTable(0)
	oh := mustInsert(t, otab, KindSession, "o", Ref{}, AllRights, nil)
	for _, tt := range []struct {
		name   string
		kind   Kind
		parent Ref
		want   error
	}{
		{"invalid kind", KindInvalid, Ref{}, ErrInvalidArgument},
		{"unknown kind", kindMax, Ref{}, ErrInvalidArgument},
		{"parent from another space", KindBuffer, mustRef(t, otab, oh, KindSession), ErrInvalidArgument},
	} {
		if _, err := tab.Insert(tt.kind, "x", tt.parent, 0, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
		}
	}
}

// A cleanup may look things up and insert into other tables: it runs
// without the space lock.
func TestCleanupRunsUnlocked(t *testing.T) {
	sp := NewSpace()
	a, b := sp.NewTable(0), sp.NewTable(0)
	other := mustInsert(t, b, KindSession, "b", Ref{}, 0, nil)
	var inserted Handle
	h := mustInsert(t, a, KindBuffer, "x", Ref{}, 0, func() {
		if _, err := b.Lookup(other, KindSession, 0); err != nil {
			t.Errorf("Lookup in cleanup: %v", err)
		}
		var err error
		inserted, err = b.Insert(KindFence, "from cleanup", Ref{}, 0, nil)
		if err != nil {
			t.Errorf("Insert in cleanup: %v", err)
		}
	})
	if err := a.Release(h); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lookup(inserted, KindFence, 0); err != nil {
		t.Errorf("handle inserted by cleanup: %v", err)
	}
}

func TestRightsString(t *testing.T) {
	for _, tt := range []struct {
		r    Rights
		want string
	}{
		{0, "none"},
		{RightLaunch | RightCopy, "launch|copy"},
		{RightBufferRead | 1<<40, "buffer-read|0x10000000000"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#x.String() = %q; want %q", uint64(tt.r), got, tt.want)
		}
	}
	if got := KindMapping.String(); got != "mapping" {
		t.Errorf("KindMapping = %q", got)
	}
	if got := Kind(200).String(); got != "kind(200)" {
		t.Errorf("Kind(200) = %q", got)
	}
}

// Concurrent lookups, inserts, revokes, releases and closes across tables:
// every cleanup runs exactly once and children always before parents.
func TestConcurrentRevocation(t *testing.T) {
	const sessions = 8
	const rounds = 200
	sp := NewSpace()
	var cleaned sync.Map // *obj -> count
	type obj struct {
		parent *obj
		done   atomic.Bool
	}
	var orderErr atomic.Value
	mk := func(parent *obj) (*obj, func()) {
		o := &obj{parent: parent}
		return o, func() {
			if v, loaded := cleaned.LoadOrStore(o, 1); loaded {
				orderErr.Store(fmt.Sprintf("cleanup ran twice (%v)", v))
			}
			if o.parent != nil && o.parent.done.Load() {
				orderErr.Store("parent cleaned before child")
			}
			o.done.Store(true)
		}
	}
	tables := make([]*Table, sessions)
	roots := make([]Handle, sessions)
	rootObjs := make([]*obj, sessions)
	for i := range tables {
		tables[i] = sp.NewTable(0)
		o, c := mk(nil)
		rootObjs[i] = o
		roots[i] = mustInsert(t, tables[i], KindSession, o, Ref{}, AllRights, c)
	}
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab := tables[i]
			peer := tables[(i+1)%sessions]
			peerRoot := roots[(i+1)%sessions]
			for r := range rounds {
				sref, err := tab.Ref(roots[i], KindSession, 0)
				if err != nil {
					t.Errorf("own session: %v", err)
					return
				}
				bo, bc := mk(sref.Object().(*obj))
				bh, err := tab.Insert(KindBuffer, bo, sref, AllBufferRights, bc)
				if err != nil {
					continue
				}
				gref, err := tab.Ref(bh, KindBuffer, 0)
				if err != nil {
					continue
				}
				// A mapping in the peer's table, child of our buffer.
				mo, mc := mk(bo)
				mh, err := peer.Insert(KindMapping, mo, gref, RightBufferRead, mc)
				if err == nil && r%2 == 0 {
					_ = peer.Release(mh)
				}
				_, _ = peer.Lookup(peerRoot, KindSession, 0)
				switch r % 3 {
				case 0:
					_ = tab.Revoke(bh)
				case 1:
					_ = tab.Release(bh)
				}
			}
		}()
	}
	wg.Wait()
	for _, tab := range tables {
		tab.Close()
	}
	if v := orderErr.Load(); v != nil {
		t.Fatal(v)
	}
	n := 0
	cleaned.Range(func(_, _ any) bool { n++; return true })
	for i, o := range rootObjs {
		if !o.done.Load() {
			t.Errorf("root %d not cleaned", i)
		}
	}
	if n < sessions {
		t.Errorf("only %d cleanups ran", n)
	}
}

// Revoking a parent while a concurrent revocation of its child is still
// running its cleanups waits for them: children before parents.
func TestRevokeWaitsForConcurrentChildCleanup(t *testing.T) {
	sp := NewSpace()
	tab := sp.NewTable(0)
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	childStarted := make(chan struct{})
	release := make(chan struct{})
	parent := mustInsert(t, tab, KindBuffer, "p", Ref{}, 0, func() { note("parent") })
	child := mustInsert(t, tab, KindGrant, "c", mustRef(t, tab, parent, KindBuffer), 0, func() {
		close(childStarted)
		<-release
		note("child")
	})
	done := make(chan error)
	go func() { done <- tab.Revoke(child) }()
	<-childStarted
	parentDone := make(chan error)
	go func() { parentDone <- tab.Revoke(parent) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-parentDone; err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "child" || order[1] != "parent" {
		t.Errorf("cleanup order %v; want [child parent]", order)
	}
}
