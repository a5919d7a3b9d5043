// Green contexts: a device's SM resource, split into groups of SMs, and a
// context confined to some of them; with page-locked host memory that
// kernels write and the host reads without a copy.

package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Green contexts are the driver's documented way to confine a context's
// kernels to a subset of SMs (CUDA 12.4 and later). They partition inside
// one process only, and in groups the driver sizes (8 SMs on Hopper).

// SMResource mirrors CUdevResource (cuda.h, CUDA 12.4-13.0): a uint32 type,
// 92 bytes of padding, then a union whose SM member starts with smCount,
// minSmPartitionSize and smCoscheduledAlignment; 144 bytes in all.
type SMResource [smResourceSize]byte

const (
	smResourceSize   = 144
	smResourceOffset = 96
	resourceTypeSM   = 1 // CU_DEV_RESOURCE_TYPE_SM
	greenDefaultStrm = 1 // CU_GREEN_CTX_DEFAULT_STREAM, required by cuGreenCtxCreate
)

func (r *SMResource) word(i int) uint32 {
	return *(*uint32)(unsafe.Pointer(&r[smResourceOffset+4*i]))
}

// SMCount is the number of SMs in the resource.
func (r *SMResource) SMCount() int { return int(r.word(0)) }

// MinPartition is the smallest group the driver will split it into.
func (r *SMResource) MinPartition() int { return int(r.word(1)) }

// Alignment is the SM count every group is a multiple of.
func (r *SMResource) Alignment() int { return int(r.word(2)) }

type greenAPI struct {
	getResource  func(int32, *SMResource, int32) Result
	split        func(*SMResource, *uint32, *SMResource, *SMResource, uint32, uint32) Result
	generateDesc func(*uintptr, *SMResource, uint32) Result
	create       func(*uintptr, uintptr, int32, uint32) Result
	toContext    func(*uintptr, uintptr) Result
	destroy      func(uintptr) Result
}

func bindGreen(h uintptr) *greenAPI {
	g := &greenAPI{}
	for _, b := range []struct {
		fptr any
		name string
	}{
		{&g.getResource, "cuDeviceGetDevResource"},
		{&g.split, "cuDevSmResourceSplitByCount"},
		{&g.generateDesc, "cuDevResourceGenerateDesc"},
		{&g.create, "cuGreenCtxCreate"},
		{&g.toContext, "cuCtxFromGreenCtx"},
		{&g.destroy, "cuGreenCtxDestroy"},
	} {
		if _, err := purego.Dlsym(h, b.name); err != nil {
			return nil
		}
		purego.RegisterLibFunc(b.fptr, h, b.name)
	}
	return g
}

// ErrNoGreenContexts is returned where the driver lacks the green-context API.
var ErrNoGreenContexts = errors.New("this driver has no green contexts (they need CUDA 12.4 or later)")

// SMs returns the device's whole SM resource.
func (d Device) SMs() (SMResource, error) {
	var r SMResource
	if lib.green == nil {
		return r, ErrNoGreenContexts
	}
	return r, check("cuDeviceGetDevResource", lib.green.getResource(int32(d), &r, resourceTypeSM))
}

// SplitSMs splits in into as many groups of at least minCount SMs as fit
// (the driver rounds minCount up to its granularity) and what is left.
func SplitSMs(in SMResource, minCount int) (groups []SMResource, rest SMResource, err error) {
	if lib.green == nil {
		return nil, rest, ErrNoGreenContexts
	}
	var n uint32
	if err := check("cuDevSmResourceSplitByCount", lib.green.split(nil, &n, &in, nil, 0, uint32(minCount))); err != nil {
		return nil, rest, err
	}
	if n == 0 {
		return nil, in, fmt.Errorf("%d SMs cannot be split into groups of %d", in.SMCount(), minCount)
	}
	groups = make([]SMResource, n)
	err = check("cuDevSmResourceSplitByCount", lib.green.split(&groups[0], &n, &in, &rest, 0, uint32(minCount)))
	return groups[:n], rest, err
}

// GreenContext is a context confined to an SM resource. Its Context is made
// current like a primary context's; streams created then belong to it.
type GreenContext struct {
	Context
	green uintptr
	SMs   int
}

// NewGreenContext creates a green context on d over the union of res.
func (d Device) NewGreenContext(res ...SMResource) (*GreenContext, error) {
	if lib.green == nil {
		return nil, ErrNoGreenContexts
	}
	if len(res) == 0 {
		return nil, errors.New("a green context needs at least one SM resource")
	}
	var desc, g, c uintptr
	if err := check("cuDevResourceGenerateDesc", lib.green.generateDesc(&desc, &res[0], uint32(len(res)))); err != nil {
		return nil, err
	}
	if err := check("cuGreenCtxCreate", lib.green.create(&g, desc, int32(d), greenDefaultStrm)); err != nil {
		return nil, err
	}
	if err := check("cuCtxFromGreenCtx", lib.green.toContext(&c, g)); err != nil {
		lib.green.destroy(g)
		return nil, err
	}
	sms := 0
	for i := range res {
		sms += res[i].SMCount()
	}
	return &GreenContext{Context: Context{dev: d, ctx: c}, green: g, SMs: sms}, nil
}

// MakeCurrent makes c current on the calling (locked) thread.
func (c *Context) MakeCurrent() error { return check("cuCtxSetCurrent", lib.ctxSetCurrent(c.ctx)) }

// Destroy releases the green context.
func (g *GreenContext) Destroy() error { return check("cuGreenCtxDestroy", lib.green.destroy(g.green)) }

// HostMapped is page-locked host memory that kernels can write through the
// returned device pointer; the host sees their writes without a copy. It
// lives as long as the process.
type HostMapped struct {
	Host unsafe.Pointer
	Dev  DevPtr
}

// AllocHostMapped allocates n bytes of mapped host memory.
func AllocHostMapped(n int) (HostMapped, error) {
	const portable, deviceMap = 1, 2 // CU_MEMHOSTALLOC_*
	var h HostMapped
	if err := check("cuMemHostAlloc", lib.memHostAlloc(&h.Host, uint64(n), portable|deviceMap)); err != nil {
		return h, err
	}
	var d uint64
	if err := check("cuMemHostGetDevicePointer", lib.memHostDevPtr(&d, h.Host, 0)); err != nil {
		lib.memFreeHost(h.Host)
		return h, err
	}
	h.Dev = DevPtr(d)
	return h, nil
}

// FakeSMResource is a resource of count SMs, for testing code that divides
// resources without a GPU; the driver would reject it.
func FakeSMResource(count int) SMResource {
	var r SMResource
	*(*uint32)(unsafe.Pointer(&r[smResourceOffset])) = uint32(count)
	return r
}
