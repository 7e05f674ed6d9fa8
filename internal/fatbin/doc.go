// Package fatbin reads NVIDIA fat binaries: the containers nvcc embeds in
// programs (section .nv_fatbin) and that cuModuleLoadFatBinary and cudart's
// module registration receive. A fatbin holds entries, each a PTX text or an
// ELF (cubin) for one architecture, possibly compressed.
//
// Layout (little-endian; learned from public descriptions and the samples in
// testdata/fatbin, not from NVIDIA documentation, which does not exist):
//
//	container header, 16 bytes: u32 magic 0xBA55ED50 | u16 version 1 |
//	    u16 header size 16 | u64 size of the entries that follow
//	entry header, at least 64 bytes:
//	    0x00 u16 kind (1 PTX, 2 ELF)    0x02 u16 header version (0x0101)
//	    0x04 u32 header size            0x08 u64 payload size (padded)
//	    0x10 u32 compressed size        0x14 u32 (64 for PTX)
//	    0x18 u16 minor, u16 major       0x1c u32 SM architecture (90)
//	    0x20 u32 name offset, u32 name length (from the entry header's start)
//	    0x28 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux,
//	         0x2000 LZ4-compressed (toolkits before 13), 0x8000 zstd (13)
//	    0x30 u64 unused                 0x38 u64 uncompressed size
//	    0x40 u32 ptxas options offset, u32 length (headers of 72+ bytes)
//	payload, right after the entry header; the next entry follows it.
//
// Several containers may be concatenated (a linked program's section); Parse
// reads them all. The *wrapper* cudart registers (__fatBinC_Wrapper_t: u32
// magic 0x466243B1, u32 version, u64 pointer to the fatbin, u64 pointer to
// prelinked fatbins or a file name) holds pointers, not bytes: ParseWrapper
// validates one and returns the pointer, and the caller reads the memory,
// using ContainerSize on its first 16 bytes to learn how much to read.
//
// Parse only reads headers; Entry.Payload decompresses on demand, so picking
// the one entry a device needs out of a library built for twenty
// architectures decompresses one. Every size in the input is checked against
// the input before use; decompressed sizes are capped by MaxPayload and
// memory grows only with output actually produced. Bad input is a typed
// v1.CodeMalformed error, never a panic.
//
// The package holds no locks and no shared mutable state; Entries are safe
// to read from several goroutines (Payload allocates a fresh slice each call).
package fatbin
