// Virtual memory management: a range of device addresses backed page by
// page by physical allocations (MapPages), with the driver structs it
// passes.

package cuda

import "fmt"

// The driver's virtual memory management: physical allocations (pages of
// the allocation granularity, 2 MiB on current GPUs) mapped into a range
// of addresses reserved for them. carve memmap and the coloured pool use it
// to know which addresses share a physical page.

// allocProp mirrors CUmemAllocationProp (32 bytes): type, requested handle
// types, location (type, id), win32 metadata pointer, allocation flags.
type allocProp struct {
	typ     int32 // CU_MEM_ALLOCATION_TYPE_PINNED = 1
	_       int32 // requested handle types: none
	locType int32 // CU_MEM_LOCATION_TYPE_DEVICE = 1
	locID   int32
	_       uintptr // win32 metadata
	_       [8]byte // allocation flags
}

// accessDesc mirrors CUmemAccessDesc (12 bytes): location and flags.
type accessDesc struct {
	locType, locID int32
	flags          int32 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
}

// Pages is a range of device addresses backed page by page by physical
// allocations of Size bytes each: page i is at Base + i*Size.
type Pages struct {
	Base  DevPtr
	Size  int
	Count int
}

// MapPages reserves addresses for n physical pages of the device's
// allocation granularity, creates the pages and maps them in order.
func (d Device) MapPages(n int) (Pages, error) {
	prop := allocProp{typ: 1, locType: 1, locID: int32(d)}
	var gran uint64
	if err := check("cuMemGetAllocationGranularity", lib.memGranular(&gran, &prop, 0)); err != nil {
		return Pages{}, err
	}
	if n < 1 {
		return Pages{}, fmt.Errorf("%d pages: want at least 1", n)
	}
	total := gran * uint64(n)
	var base uint64
	if err := check("cuMemAddressReserve", lib.memReserve(&base, total, gran, 0, 0)); err != nil {
		return Pages{}, err
	}
	for i := range n {
		var h uint64
		if err := check("cuMemCreate", lib.memCreate(&h, gran, &prop, 0)); err != nil {
			return Pages{}, fmt.Errorf("page %d: %w", i, err)
		}
		if err := check("cuMemMap", lib.memMap(base+uint64(i)*gran, gran, 0, h, 0)); err != nil {
			return Pages{}, fmt.Errorf("page %d: %w", i, err)
		}
	}
	access := accessDesc{locType: 1, locID: int32(d), flags: 3}
	if err := check("cuMemSetAccess", lib.memSetAccess(base, total, &access, 1)); err != nil {
		return Pages{}, err
	}
	return Pages{Base: DevPtr(base), Size: int(gran), Count: n}, nil
}
