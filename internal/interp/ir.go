package interp

// The compiled form of a PTX function: a flat array of instructions whose
// operands are resolved to slots of the thread's register frame. A frame holds
// the function's declared registers, then its constants (immediates, symbol
// addresses), then the special registers it reads, then scratch slots; every
// value is kept as a uint64 whose low bits (the width of the type the reading
// instruction names) are meaningful. Predicates are 0 or 1.

// opcode selects how the execution loop runs an instruction: most arithmetic
// goes through a function pointer (opALU); memory, control flow and collectives
// are handled in the loop itself.
type opcode uint8

const (
	opALU    opcode = iota // in.fn(r, in)
	opMov                  // r[d] = r[a]
	opAddI32               // 32-bit integer add, the commonest instruction
	opAddI64
	opBra
	opRet // return from a device function; exit in the kernel frame
	opExit
	opCall
	opTrap
	opPrintf  // vprintf: format and print, see printf.go
	opCpAsync // cp.async, performed at once: shared[r[a]+imm] ← global[r[b]+r[e]]

	opLdParam  // kernel parameter buffer at r[a]+imm
	opLdFrame  // device-function parameter frame at pbase+imm
	opStFrame  // device-function parameter frame at pbase+imm
	opLdGlobal // ld/st: size, count, signed in the inst; base r[a]+imm
	opStGlobal
	opLdShared
	opStShared
	opLdLocal
	opStLocal
	opLdGeneric
	opStGeneric
	opAtom // atomic read-modify-write; space in in.space
	opLocalAddr
	opSreg      // a special register that changes while the thread runs
	opNanosleep // advance the thread's clock by r[a] ns
	opBar       // CTA barrier: bar.sync/arrive/red
	opWarp      // warp collective: shfl, vote, match, redux, bar.warp.sync, activemask
)

// Memory spaces of atom/red.
const (
	spGlobal uint8 = iota
	spShared
	spGeneric
)

// inst is one compiled instruction.
type inst struct {
	op    opcode
	gneg  uint8 // guard: the instruction is skipped when r[guard] == gneg
	size  uint8 // memory access: element size in bytes
	count uint8 // memory access: vector width
	sext  bool  // memory load: sign-extend the element
	space uint8 // atom: spGlobal/spShared/spGeneric
	kind  uint8 // collective or special-register kind, rounding mode, etc.
	flag  uint8 // per-op flags (ftz, sat, ...)

	guard      int32
	d, a, b, c int32
	e          int32 // a fourth source (shfl's membermask, mad's carry-in)
	d2         int32 // a second destination (setp's q, shfl's p)
	imm        uint64
	vec        []int32 // vector elements of ld/st, mov pack/unpack
	fn         func(r []uint64, in *inst)
	atom       func(old, x, y uint64) uint64
	call       *callSite
}

// callSite is a compiled call: the callee and where its parameters and return
// values live in the caller's parameter frame.
type callSite struct {
	callee *function
	args   []paramRef // in the caller's frame, one per callee parameter
	rets   []paramRef
}

// paramRef is a span of a parameter frame.
type paramRef struct{ off, size int }

// function is a compiled .entry or .func.
type function struct {
	name     string
	code     []inst
	lines    []int32  // PTX line of each instruction
	nslots   int      // frame size in slots
	template []uint64 // a fresh frame: zero registers, constants
	sregs    []sregSlot
	local    int // bytes of the function's .local frame
	lalign   int
	pframe   int        // bytes of its parameter frame: formals, returns, call-site variables
	formals  []paramRef // in its own parameter frame
	returns  []paramRef
	kernel   bool
	regWords int // 32-bit words of declared registers
}

// sregSlot is a special register the function reads, loaded into its frame
// when the frame is entered.
type sregSlot struct {
	slot int32
	kind sreg
}

// sreg names a special register.
type sreg uint8

const (
	srTidX sreg = iota
	srTidY
	srTidZ
	srNtidX
	srNtidY
	srNtidZ
	srCtaidX
	srCtaidY
	srCtaidZ
	srNctaidX
	srNctaidY
	srNctaidZ
	srLaneid
	srWarpid
	srNwarpid
	srSmid
	srNsmid
	srGridid
	srLanemaskEq
	srLanemaskLe
	srLanemaskLt
	srLanemaskGe
	srLanemaskGt
	srWarpSize
	srDynSmem
	srTotalSmem
	// dynamic: read with opSreg
	srClock
	srClock64
	srGlobaltimer
	srGlobaltimerLo
	srGlobaltimerHi
)

var sregNames = map[string]sreg{
	"%tid.x": srTidX, "%tid.y": srTidY, "%tid.z": srTidZ,
	"%ntid.x": srNtidX, "%ntid.y": srNtidY, "%ntid.z": srNtidZ,
	"%ctaid.x": srCtaidX, "%ctaid.y": srCtaidY, "%ctaid.z": srCtaidZ,
	"%nctaid.x": srNctaidX, "%nctaid.y": srNctaidY, "%nctaid.z": srNctaidZ,
	"%laneid": srLaneid, "%warpid": srWarpid, "%nwarpid": srNwarpid,
	"%smid": srSmid, "%nsmid": srNsmid, "%gridid": srGridid,
	"%lanemask_eq": srLanemaskEq, "%lanemask_le": srLanemaskLe, "%lanemask_lt": srLanemaskLt,
	"%lanemask_ge": srLanemaskGe, "%lanemask_gt": srLanemaskGt,
	"WARP_SZ": srWarpSize, "%dynamic_smem_size": srDynSmem, "%total_smem_size": srTotalSmem,
	"%clock": srClock, "%clock64": srClock64,
	"%globaltimer": srGlobaltimer, "%globaltimer_lo": srGlobaltimerLo, "%globaltimer_hi": srGlobaltimerHi,
}

func (s sreg) dynamic() bool { return s >= srClock }

// perThread reports whether a special register differs between the threads of
// a block; perBlock whether it differs between blocks of a launch.
func (s sreg) perThread() bool {
	switch s {
	case srTidX, srTidY, srTidZ, srLaneid, srWarpid, srLanemaskEq, srLanemaskLe, srLanemaskLt, srLanemaskGe, srLanemaskGt:
		return true
	}
	return false
}

func (s sreg) perBlock() bool {
	switch s {
	case srCtaidX, srCtaidY, srCtaidZ, srSmid:
		return true
	}
	return false
}

// Barrier kinds (opBar).
const (
	barSync uint8 = iota
	barArrive
	barRedPopc
	barRedAnd
	barRedOr
)

// Warp collective kinds (opWarp).
const (
	wShflUp uint8 = iota
	wShflDown
	wShflBfly
	wShflIdx
	wVoteAll
	wVoteAny
	wVoteUni
	wVoteBallot
	wMatchAny32
	wMatchAny64
	wMatchAll32
	wMatchAll64
	wReduxAdd
	wReduxMinU
	wReduxMaxU
	wReduxMinS
	wReduxMaxS
	wReduxAnd
	wReduxOr
	wReduxXor
	wSyncwarp
	wActivemask
)
