package cap_test

import (
	"errors"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/cap"
)

// A buffer granted from session A to session B: revoking A's grant unmaps it
// from B, whose handle then answers "revoked".
func Example() {
	space := cap.NewSpace()
	a, b := space.NewTable(0), space.NewTable(0)

	sessA, _ := a.Insert(cap.KindSession, "session A", cap.Ref{}, cap.AllSessionRights|cap.AllBufferRights, nil)
	sref, _ := a.Ref(sessA, cap.KindSession, cap.RightAlloc)
	buf, _ := a.Insert(cap.KindBuffer, "1 MiB", sref, cap.AllBufferRights, nil)
	bref, _ := a.Ref(buf, cap.KindBuffer, cap.RightBufferGrant)
	grant, _ := a.Insert(cap.KindGrant, "grant", bref, cap.RightBufferRead, nil)

	gref, _ := a.Ref(grant, cap.KindGrant, 0)
	mapping, _ := b.Insert(cap.KindMapping, "mapped in B", gref, cap.RightBufferRead,
		func() { fmt.Println("unmap from B") })

	obj, err := b.Lookup(mapping, cap.KindMapping, cap.RightBufferRead)
	fmt.Println(obj, err)
	_, err = b.Lookup(mapping, cap.KindMapping, cap.RightBufferWrite)
	fmt.Println(v1.CodeOf(err))

	_ = a.Revoke(grant)
	_, err = b.Lookup(mapping, cap.KindMapping, cap.RightBufferRead)
	fmt.Println(errors.Is(err, cap.ErrRevoked))
	// Output:
	// mapped in B <nil>
	// permission denied
	// unmap from B
	// true
}
