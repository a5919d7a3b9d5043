// The L2's persisting lines: a share of the L2 set aside for them, and a
// stream's access window, which marks accesses to a range persisting.

package cuda

import "unsafe"

// The L2 persisting set-aside: a context reserves part of the L2 for
// accesses that a stream's access policy window marks persisting, so that
// other traffic does not evict them.

// SetPersistingL2 sets aside bytes of the L2 for persisting accesses in the
// current context (0 gives it back).
func SetPersistingL2(bytes int) error {
	const limitPersistingL2 = 0x06 // CU_LIMIT_PERSISTING_L2_CACHE_SIZE
	return check("cuCtxSetLimit", lib.ctxSetLimit(limitPersistingL2, uint64(bytes)))
}

// ResetPersistingL2 turns every persisting line in the L2 back to normal.
func ResetPersistingL2() error { return check("cuCtxResetPersistingL2Cache", lib.ctxResetL2()) }

// accessWindow mirrors CUaccessPolicyWindow: base pointer, bytes, hit
// ratio, the access property on a hit and on a miss.
type accessWindow struct {
	base     uint64
	bytes    uint64
	hitRatio float32
	hitProp  int32
	missProp int32
	_padding int32
}

// SetAccessWindow marks hitRatio of the accesses of s's kernels to [base,
// base+bytes) persisting and the rest streaming; bytes 0 clears it.
func (s Stream) SetAccessWindow(base DevPtr, bytes int, hitRatio float32) error {
	const attrAccessPolicyWindow = 1              // CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW
	const normal, streaming, persisting = 0, 1, 2 // CUaccessProperty
	var v [64]byte                                // CUstreamAttrValue, a union of 64 bytes
	w := (*accessWindow)(unsafe.Pointer(&v[0]))
	*w = accessWindow{base: uint64(base), bytes: uint64(bytes), hitRatio: hitRatio, hitProp: persisting, missProp: streaming}
	if bytes == 0 {
		w.hitProp, w.missProp = normal, normal
	}
	return check("cuStreamSetAttribute", lib.streamSetAttr(uintptr(s), attrAccessPolicyWindow, &v))
}
