// Package cap holds the capabilities of a driver process: per-connection handle
// tables, the rights each handle carries, and the revocation tree that ties
// objects together across tables.
//
// A Space is one driver process's set of capabilities. Each client connection
// gets a Table in it; a Table maps u64 handles to objects (sessions, buffers,
// programs, kernels, streams, fences, grants, mappings). A handle is a slot
// index plus a tag computed from a per-table random secret, the slot's
// generation and the object's kind, so a handle from another table, a forged
// value or one whose slot has since been reused matches no slot (with
// probability 1-2⁻⁴⁰) and is rejected as an invalid handle without being
// dereferenced. Lookups never hash: the table stores each slot's full handle
// and compares it.
//
// Every object may have a parent, possibly in another table (a buffer granted
// by session A and mapped by session B: B's mapping is a child of A's grant,
// itself a child of A's buffer). Revoking or releasing an object revokes its
// whole subtree; each revoked object's cleanup callback runs exactly once,
// children before parents, after the space's lock has been dropped, so
// cleanups may call into the memory manager, the backend and even Lookup on
// this space. A cleanup must not Revoke, Release or Close an ancestor of its
// own object (it would wait for itself). Revoked handles stay in their tables
// and answer ErrRevoked until they are released.
//
// Rights narrow only: an object's rights are a subset of its parent's,
// Insert refuses rights its parent lacks and Restrict intersects an object's
// rights and those of all its descendants with a mask.
//
// # Concurrency and lock order
//
// There is one lock, Space.mu. It guards the tree (parents, children, claims)
// and every table's slot allocation and free list; Insert, Revoke, Release,
// Restrict and Table.Close take it. Lookup and Ref take no lock at all: a table's slots are published with atomic pointers and
// an object's state and rights are atomics, so the launch path costs a few
// atomic loads. A Lookup racing with a Revoke may return the object just
// before it is revoked; the cleanup runs after the revocation, so users of the
// object must tolerate it being torn down under them (the memory manager and
// backend fail such operations with their own typed errors).
//
// Cleanups never run under Space.mu. A revocation that finds a descendant
// already being cleaned up by a concurrent revocation waits (on a condition
// variable of Space.mu) for that cleanup to finish before running its own, so
// children-before-parents holds across concurrent calls too.
package cap
