package ptx

// Type is a PTX fundamental type, as named by a type modifier (".u32") or a
// declaration.
type Type uint8

// Types. TypeNone is the zero value: no type.
const (
	TypeNone Type = iota
	TypeB8
	TypeB16
	TypeB32
	TypeB64
	TypeB128
	TypeU8
	TypeU16
	TypeU32
	TypeU64
	TypeS8
	TypeS16
	TypeS32
	TypeS64
	TypeF16
	TypeF16x2
	TypeBF16
	TypeBF16x2
	TypeTF32
	TypeF32
	TypeF64
	TypePred
	// Sub-byte and narrow floating-point types: mma, cvt and wgmma modifiers.
	TypeB1
	TypeU4
	TypeS4
	TypeE4M3
	TypeE5M2
	TypeE4M3x2
	TypeE5M2x2
	TypeE4M3x4
	TypeE5M2x4
	TypeE2M1
	TypeE2M3
	TypeE3M2
	TypeE2M1x2
	TypeE2M3x2
	TypeE3M2x2
	TypeE2M1x4
	TypeUE8M0
	TypeUE8M0x2
	// Opaque handle types of textures, samplers and surfaces.
	TypeTexRef
	TypeSamplerRef
	TypeSurfRef
	typeMax
)

type typeInfo struct {
	name  string
	bits  int
	float bool
	sign  bool
	integ bool
}

var typeInfos = [typeMax]typeInfo{
	TypeNone:       {"", 0, false, false, false},
	TypeB8:         {".b8", 8, false, false, true},
	TypeB16:        {".b16", 16, false, false, true},
	TypeB32:        {".b32", 32, false, false, true},
	TypeB64:        {".b64", 64, false, false, true},
	TypeB128:       {".b128", 128, false, false, true},
	TypeU8:         {".u8", 8, false, false, true},
	TypeU16:        {".u16", 16, false, false, true},
	TypeU32:        {".u32", 32, false, false, true},
	TypeU64:        {".u64", 64, false, false, true},
	TypeS8:         {".s8", 8, false, true, true},
	TypeS16:        {".s16", 16, false, true, true},
	TypeS32:        {".s32", 32, false, true, true},
	TypeS64:        {".s64", 64, false, true, true},
	TypeF16:        {".f16", 16, true, true, false},
	TypeF16x2:      {".f16x2", 32, true, true, false},
	TypeBF16:       {".bf16", 16, true, true, false},
	TypeBF16x2:     {".bf16x2", 32, true, true, false},
	TypeTF32:       {".tf32", 32, true, true, false},
	TypeF32:        {".f32", 32, true, true, false},
	TypeF64:        {".f64", 64, true, true, false},
	TypePred:       {".pred", 1, false, false, false},
	TypeB1:         {".b1", 1, false, false, true},
	TypeU4:         {".u4", 4, false, false, true},
	TypeS4:         {".s4", 4, false, true, true},
	TypeE4M3:       {".e4m3", 8, true, true, false},
	TypeE5M2:       {".e5m2", 8, true, true, false},
	TypeE4M3x2:     {".e4m3x2", 16, true, true, false},
	TypeE5M2x2:     {".e5m2x2", 16, true, true, false},
	TypeE4M3x4:     {".e4m3x4", 32, true, true, false},
	TypeE5M2x4:     {".e5m2x4", 32, true, true, false},
	TypeE2M1:       {".e2m1", 4, true, true, false},
	TypeE2M3:       {".e2m3", 6, true, true, false},
	TypeE3M2:       {".e3m2", 6, true, true, false},
	TypeE2M1x2:     {".e2m1x2", 8, true, true, false},
	TypeE2M3x2:     {".e2m3x2", 16, true, true, false},
	TypeE3M2x2:     {".e3m2x2", 16, true, true, false},
	TypeE2M1x4:     {".e2m1x4", 16, true, true, false},
	TypeUE8M0:      {".ue8m0", 8, true, false, false},
	TypeUE8M0x2:    {".ue8m0x2", 16, true, false, false},
	TypeTexRef:     {".texref", 64, false, false, false},
	TypeSamplerRef: {".samplerref", 64, false, false, false},
	TypeSurfRef:    {".surfref", 64, false, false, false},
}

var typeByName = func() map[string]Type {
	m := make(map[string]Type, typeMax)
	for t := Type(1); t < typeMax; t++ {
		m[typeInfos[t].name] = t
	}
	return m
}()

// ParseType returns the type named by a modifier such as ".f32" (with its dot).
func ParseType(mod string) (Type, bool) {
	t, ok := typeByName[mod]
	return t, ok
}

// String returns the type's modifier, with its dot: ".u32". TypeNone is "".
func (t Type) String() string {
	if t < typeMax {
		return typeInfos[t].name
	}
	return ".type?"
}

// Bits returns the type's width in bits: 1 for .pred and .b1, 4 for .u4,
// 64 for the opaque handle types.
func (t Type) Bits() int {
	if t < typeMax {
		return typeInfos[t].bits
	}
	return 0
}

// Size returns the type's size in bytes in memory; 0 for TypeNone, .pred and
// the sub-byte types, which have no memory representation of their own.
func (t Type) Size() int {
	if t == TypePred {
		return 0
	}
	return t.Bits() / 8
}

// IsFloat reports whether t is a floating-point type (packed and narrow
// formats included).
func (t Type) IsFloat() bool { return t < typeMax && typeInfos[t].float }

// IsSigned reports whether t is a signed type: .s8 to .s64, .s4 and the signed
// floating-point types.
func (t Type) IsSigned() bool { return t < typeMax && typeInfos[t].sign }

// IsInteger reports whether t is an integer or untyped-bits type (.b, .u, .s).
func (t Type) IsInteger() bool { return t < typeMax && typeInfos[t].integ }

// StateSpace is a PTX state space.
type StateSpace uint8

// State spaces. SpaceNone means none was named: for an instruction, a generic
// address.
const (
	SpaceNone          StateSpace = iota
	SpaceReg                      // .reg
	SpaceSReg                     // .sreg
	SpaceConst                    // .const
	SpaceGlobal                   // .global
	SpaceLocal                    // .local
	SpaceParam                    // .param (also .param::entry, .param::func)
	SpaceShared                   // .shared (also .shared::cta)
	SpaceSharedCluster            // .shared::cluster
	SpaceTex                      // .tex
	spaceMax
)

var spaceNames = [spaceMax]string{
	SpaceNone:          "",
	SpaceReg:           ".reg",
	SpaceSReg:          ".sreg",
	SpaceConst:         ".const",
	SpaceGlobal:        ".global",
	SpaceLocal:         ".local",
	SpaceParam:         ".param",
	SpaceShared:        ".shared",
	SpaceSharedCluster: ".shared::cluster",
	SpaceTex:           ".tex",
}

var spaceByName = map[string]StateSpace{
	".reg":             SpaceReg,
	".sreg":            SpaceSReg,
	".const":           SpaceConst,
	".global":          SpaceGlobal,
	".local":           SpaceLocal,
	".param":           SpaceParam,
	".param::entry":    SpaceParam,
	".param::func":     SpaceParam,
	".shared":          SpaceShared,
	".shared::cta":     SpaceShared,
	".shared::cluster": SpaceSharedCluster,
	".tex":             SpaceTex,
}

// ParseStateSpace returns the state space named by a modifier such as
// ".global" or ".shared::cta" (with its dot).
func ParseStateSpace(mod string) (StateSpace, bool) {
	s, ok := spaceByName[mod]
	return s, ok
}

// String returns the state space's directive, with its dot; SpaceNone is "".
func (s StateSpace) String() string {
	if s < spaceMax {
		return spaceNames[s]
	}
	return ".space?"
}

var linkageNames = [...]string{
	LinkNone:    "",
	LinkVisible: ".visible",
	LinkExtern:  ".extern",
	LinkWeak:    ".weak",
	LinkCommon:  ".common",
}

// String returns the linkage directive, with its dot; LinkNone is "".
func (l Linkage) String() string {
	if int(l) < len(linkageNames) {
		return linkageNames[l]
	}
	return ".linkage?"
}

func parseLinkage(s string) (Linkage, bool) {
	switch s {
	case ".visible":
		return LinkVisible, true
	case ".extern":
		return LinkExtern, true
	case ".weak":
		return LinkWeak, true
	case ".common":
		return LinkCommon, true
	}
	return LinkNone, false
}
