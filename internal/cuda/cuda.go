// Package cuda reaches the CUDA driver API through purego: libcuda.so.1 is
// loaded at run time, so carve builds without cgo and runs on any machine
// with an NVIDIA driver. Only the calls carve needs are bound.
package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Result is a CUresult. Its Error names the code the way the driver does.
type Result int32

// Codes carve acts on.
const (
	Success     Result = 0
	NotReady    Result = 600
	NoDevice    Result = 100
	notFoundMsg        = "unknown CUresult"
)

func (r Result) Error() string {
	if lib != nil && lib.getErrorName != nil {
		var p *byte
		if lib.getErrorName(r, &p) == Success && p != nil {
			return fmt.Sprintf("%s (%d)", goString(p), int32(r))
		}
	}
	return fmt.Sprintf("%s %d", notFoundMsg, int32(r))
}

// ErrNoDriver is returned when libcuda.so.1 cannot be loaded.
var ErrNoDriver = errors.New("the NVIDIA driver library libcuda.so.1 could not be loaded (is an NVIDIA driver installed?)")

func check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return fmt.Errorf("%s: %w", call, r)
}

type driver struct {
	handle         uintptr
	getErrorName   func(Result, **byte) Result
	init           func(uint32) Result
	driverGetVer   func(*int32) Result
	deviceGet      func(*int32, int32) Result
	deviceGetCount func(*int32) Result
	deviceGetName  func(*byte, int32, int32) Result
	deviceGetUUID  func(*[16]byte, int32) Result
	deviceGetAttr  func(*int32, int32, int32) Result
	deviceTotalMem func(*uint64, int32) Result
	primaryRetain  func(*uintptr, int32) Result
	primaryRelease func(int32) Result
	ctxSetCurrent  func(uintptr) Result
	ctxSynchronize func() Result
	moduleLoadData func(*uintptr, unsafe.Pointer) Result
	moduleGetFunc  func(*uintptr, uintptr, string) Result
	funcSetAttr    func(uintptr, int32, int32) Result
	memAlloc       func(*uint64, uint64) Result
	memFree        func(uint64) Result
	memcpyDtoH     func(unsafe.Pointer, uint64, uint64) Result
	memsetD32      func(uint64, uint32, uint64) Result
	streamCreate   func(*uintptr, uint32) Result
	streamQuery    func(uintptr) Result
	launchKernel   func(uintptr, uint32, uint32, uint32, uint32, uint32, uint32, uint32, uintptr, unsafe.Pointer, unsafe.Pointer) Result
	launchKernelEx func(unsafe.Pointer, uintptr, unsafe.Pointer, unsafe.Pointer) Result
	getExportTable func(*uintptr, *[16]byte) Result
	eventCreate    func(*uintptr, uint32) Result
	eventRecord    func(uintptr, uintptr) Result
	eventSync      func(uintptr) Result
	eventElapsed   func(*float32, uintptr, uintptr) Result
	memcpyHtoD     func(uint64, unsafe.Pointer, uint64) Result
	memHostAlloc   func(*unsafe.Pointer, uint64, uint32) Result
	memHostDevPtr  func(*uint64, unsafe.Pointer, uint32) Result
	memFreeHost    func(unsafe.Pointer) Result
	memGranular    func(*uint64, *allocProp, int32) Result
	memReserve     func(*uint64, uint64, uint64, uint64, uint64) Result
	memCreate      func(*uint64, uint64, *allocProp, uint64) Result
	memMap         func(uint64, uint64, uint64, uint64, uint64) Result
	memSetAccess   func(uint64, uint64, *accessDesc, uint64) Result
	ctxSetLimit    func(int32, uint64) Result
	streamSetAttr  func(uintptr, int32, *[64]byte) Result
	ctxResetL2     func() Result
	green          *greenAPI // nil where the driver has no green contexts
}

var (
	lib     *driver
	libErr  error
	libOnce sync.Once
)

// Load opens libcuda.so.1 (or $CARVE_LIBCUDA) and calls cuInit.
func Load() error {
	libOnce.Do(func() { lib, libErr = load() })
	return libErr
}

func load() (*driver, error) {
	path := os.Getenv("CARVE_LIBCUDA")
	if path == "" {
		path = "libcuda.so.1"
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, err)
	}
	d := &driver{handle: h}
	bind := []struct {
		fptr any
		name string
	}{
		{&d.getErrorName, "cuGetErrorName"},
		{&d.init, "cuInit"},
		{&d.driverGetVer, "cuDriverGetVersion"},
		{&d.deviceGet, "cuDeviceGet"},
		{&d.deviceGetCount, "cuDeviceGetCount"},
		{&d.deviceGetName, "cuDeviceGetName"},
		{&d.deviceGetUUID, "cuDeviceGetUuid_v2"},
		{&d.deviceGetAttr, "cuDeviceGetAttribute"},
		{&d.deviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.primaryRetain, "cuDevicePrimaryCtxRetain"},
		{&d.primaryRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.ctxSetCurrent, "cuCtxSetCurrent"},
		{&d.ctxSynchronize, "cuCtxSynchronize"},
		{&d.moduleLoadData, "cuModuleLoadData"},
		{&d.moduleGetFunc, "cuModuleGetFunction"},
		{&d.funcSetAttr, "cuFuncSetAttribute"},
		{&d.memAlloc, "cuMemAlloc_v2"},
		{&d.memFree, "cuMemFree_v2"},
		{&d.memcpyDtoH, "cuMemcpyDtoH_v2"},
		{&d.memsetD32, "cuMemsetD32_v2"},
		{&d.streamCreate, "cuStreamCreate"},
		{&d.streamQuery, "cuStreamQuery"},
		{&d.launchKernel, "cuLaunchKernel"},
		{&d.launchKernelEx, "cuLaunchKernelEx"},
		{&d.getExportTable, "cuGetExportTable"},
		{&d.eventCreate, "cuEventCreate"},
		{&d.eventRecord, "cuEventRecord"},
		{&d.eventSync, "cuEventSynchronize"},
		{&d.eventElapsed, "cuEventElapsedTime"},
		{&d.memcpyHtoD, "cuMemcpyHtoD_v2"},
		{&d.memHostAlloc, "cuMemHostAlloc"},
		{&d.memHostDevPtr, "cuMemHostGetDevicePointer_v2"},
		{&d.memFreeHost, "cuMemFreeHost"},
		{&d.memGranular, "cuMemGetAllocationGranularity"},
		{&d.memReserve, "cuMemAddressReserve"},
		{&d.memCreate, "cuMemCreate"},
		{&d.memMap, "cuMemMap"},
		{&d.memSetAccess, "cuMemSetAccess"},
		{&d.ctxSetLimit, "cuCtxSetLimit"},
		{&d.streamSetAttr, "cuStreamSetAttribute"},
		{&d.ctxResetL2, "cuCtxResetPersistingL2Cache"},
	}
	for _, b := range bind {
		if _, err := purego.Dlsym(h, b.name); err != nil {
			return nil, fmt.Errorf("driver library %s lacks %s (driver too old?): %w", path, b.name, err)
		}
		purego.RegisterLibFunc(b.fptr, h, b.name)
	}
	d.green = bindGreen(h)
	lib = d // so that Result.Error can name codes from here on
	if err := check("cuInit", d.init(0)); err != nil {
		if errors.Is(err, NoDevice) {
			return nil, fmt.Errorf("no CUDA-capable GPU is visible: %w", err)
		}
		return nil, err
	}
	return d, nil
}

func goString(p *byte) string {
	var b strings.Builder
	for ptr := unsafe.Pointer(p); *(*byte)(ptr) != 0; ptr = unsafe.Add(ptr, 1) {
		b.WriteByte(*(*byte)(ptr))
	}
	return b.String()
}

// DriverVersion is the CUDA version the driver supports, e.g. 13000.
func DriverVersion() (int, error) {
	var v int32
	return int(v), check("cuDriverGetVersion", lib.driverGetVer(&v))
}

// DeviceCount is the number of visible GPUs.
func DeviceCount() (int, error) {
	var n int32
	return int(n), check("cuDeviceGetCount", lib.deviceGetCount(&n))
}

// Device is a CUdevice ordinal.
type Device int32

// Attribute is a CUdevice_attribute.
type Attribute int32

// Attributes carve reads.
const (
	AttrSMCount      Attribute = 16
	AttrMemClockKHz  Attribute = 36 // peak memory clock
	AttrBusWidth     Attribute = 37 // global memory bus width, bits
	AttrL2Size       Attribute = 38
	AttrCCMajor      Attribute = 75
	AttrCCMinor      Attribute = 76
	AttrPersistingL2 Attribute = 108 // most L2 a context may set aside for persisting accesses
	AttrAccessWindow Attribute = 109 // largest access policy window
	AttrSharedPerSM  Attribute = 81  // shared memory per multiprocessor, bytes
	AttrSharedOptin  Attribute = 97  // most dynamic shared memory a block may opt in to
)

// GetDevice returns the device of the given ordinal.
func GetDevice(ordinal int) (Device, error) {
	var d int32
	return Device(d), check("cuDeviceGet", lib.deviceGet(&d, int32(ordinal)))
}

// Name is the device's marketing name.
func (d Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", lib.deviceGetName(&buf[0], int32(len(buf)), int32(d))); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf[:clen(buf)]), " "), nil
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// UUID is the device's UUID in nvidia-smi's form, GPU-xxxxxxxx-....
func (d Device) UUID() (string, error) {
	var u [16]byte
	if err := check("cuDeviceGetUuid", lib.deviceGetUUID(&u, int32(d))); err != nil {
		return "", err
	}
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}

// Attr reads one device attribute.
func (d Device) Attr(a Attribute) (int, error) {
	var v int32
	return int(v), check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), lib.deviceGetAttr(&v, int32(a), int32(d)))
}

// TotalMem is the device's memory in bytes.
func (d Device) TotalMem() (uint64, error) {
	var n uint64
	return n, check("cuDeviceTotalMem", lib.deviceTotalMem(&n, int32(d)))
}

// Context is a retained primary context, made current on the calling thread.
// Callers lock their goroutine to its OS thread: CUDA's current context is
// per thread.
type Context struct {
	dev Device
	ctx uintptr
}

// RetainPrimary retains d's primary context and makes it current.
func (d Device) RetainPrimary() (*Context, error) {
	var c uintptr
	if err := check("cuDevicePrimaryCtxRetain", lib.primaryRetain(&c, int32(d))); err != nil {
		return nil, err
	}
	if err := check("cuCtxSetCurrent", lib.ctxSetCurrent(c)); err != nil {
		lib.primaryRelease(int32(d))
		return nil, err
	}
	return &Context{dev: d, ctx: c}, nil
}

// Synchronize waits for all work in the context.
func (c *Context) Synchronize() error { return check("cuCtxSynchronize", lib.ctxSynchronize()) }

// Module is a loaded CUmodule.
type Module uintptr

// LoadPTX JIT-compiles PTX text through the driver.
func LoadPTX(ptx string) (Module, error) {
	b := append([]byte(ptx), 0)
	var m uintptr
	err := check("cuModuleLoadData", lib.moduleLoadData(&m, unsafe.Pointer(&b[0])))
	return Module(m), err
}

// Function is a CUfunction.
type Function uintptr

// Function looks a kernel up by its (extern "C") name.
func (m Module) Function(name string) (Function, error) {
	var f uintptr
	err := check("cuModuleGetFunction("+name+")", lib.moduleGetFunc(&f, uintptr(m), name))
	return Function(f), err
}

// SetMaxDynamicShared lets launches of f use up to n bytes of dynamic shared memory.
func (f Function) SetMaxDynamicShared(n int) error {
	const maxDynamicSharedSizeBytes = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	return check("cuFuncSetAttribute", lib.funcSetAttr(uintptr(f), maxDynamicSharedSizeBytes, int32(n)))
}

// DevPtr is device memory.
type DevPtr uint64

// Alloc allocates n bytes of device memory.
func Alloc(n int) (DevPtr, error) {
	var p uint64
	err := check("cuMemAlloc", lib.memAlloc(&p, uint64(n)))
	return DevPtr(p), err
}

// Free releases device memory.
func (p DevPtr) Free() error { return check("cuMemFree", lib.memFree(uint64(p))) }

// Fill32 sets n uint32 words to v and waits for it (see Upload).
func (p DevPtr) Fill32(v uint32, n int) error {
	if err := check("cuMemsetD32", lib.memsetD32(uint64(p), v, uint64(n))); err != nil {
		return err
	}
	return check("cuCtxSynchronize", lib.ctxSynchronize())
}

// Upload copies src to device memory at p and waits until the copy has
// landed. A copy from pageable memory may return before its DMA is done,
// and kernels on carve's non-blocking streams are not ordered after it.
func Upload[T any](p DevPtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	n := uint64(len(src)) * uint64(unsafe.Sizeof(src[0]))
	if err := check("cuMemcpyHtoD", lib.memcpyHtoD(uint64(p), unsafe.Pointer(&src[0]), n)); err != nil {
		return err
	}
	return check("cuCtxSynchronize", lib.ctxSynchronize())
}

// Copy allocates device memory for src (one element where src is empty,
// so that a kernel may take the pointer) and uploads src into it.
func Copy[T any](src []T) (DevPtr, error) {
	var zero T
	p, err := Alloc(max(1, len(src)) * int(unsafe.Sizeof(zero)))
	if err != nil {
		return 0, err
	}
	if err := Upload(p, src); err != nil {
		p.Free()
		return 0, err
	}
	return p, nil
}

// Download copies len(dst) elements from device memory at p.
func Download[T any](dst []T, p DevPtr) error {
	if len(dst) == 0 {
		return nil
	}
	n := uint64(len(dst)) * uint64(unsafe.Sizeof(dst[0]))
	return check("cuMemcpyDtoH", lib.memcpyDtoH(unsafe.Pointer(&dst[0]), uint64(p), n))
}

// Event is a CUevent, for timing work on a stream.
type Event uintptr

// NewEvent creates a timing event.
func NewEvent() (Event, error) {
	var e uintptr
	err := check("cuEventCreate", lib.eventCreate(&e, 0))
	return Event(e), err
}

// Record enqueues the event on s.
func (e Event) Record(s Stream) error {
	return check("cuEventRecord", lib.eventRecord(uintptr(e), uintptr(s)))
}

// Synchronize waits for the event.
func (e Event) Synchronize() error { return check("cuEventSynchronize", lib.eventSync(uintptr(e))) }

// Since is the time in milliseconds from start to e, both completed.
func (e Event) Since(start Event) (float64, error) {
	var ms float32
	err := check("cuEventElapsedTime", lib.eventElapsed(&ms, uintptr(start), uintptr(e)))
	return float64(ms), err
}

// OpenPrimary locks the calling goroutine to its OS thread (CUDA's current
// context is per thread), loads the driver and makes device ordinal's
// primary context current.
func OpenPrimary(ordinal int) (Device, *Context, error) {
	runtime.LockOSThread()
	if err := Load(); err != nil {
		return 0, nil, err
	}
	dev, err := GetDevice(ordinal)
	if err != nil {
		return 0, nil, err
	}
	ctx, err := dev.RetainPrimary()
	return dev, ctx, err
}

// Stream is a CUstream.
type Stream uintptr

// NewStream creates a non-blocking stream.
func NewStream() (Stream, error) {
	var s uintptr
	err := check("cuStreamCreate", lib.streamCreate(&s, 1))
	return Stream(s), err
}

// Done reports whether all work on s finished; an error if any failed.
func (s Stream) Done() (bool, error) {
	r := lib.streamQuery(uintptr(s))
	if r == NotReady {
		return false, nil
	}
	return r == Success, check("cuStreamQuery", r)
}

// Launch describes one kernel launch.
type Launch struct {
	Grid, Block [3]uint32
	Cluster     uint32 // blocks per thread-block cluster along x; 0 = none
	Shared      uint32
	Stream      Stream
	Args        []unsafe.Pointer // pointers to each argument's value
}

// launchConfig mirrors CUlaunchConfig.
type launchConfig struct {
	grid, block [3]uint32
	shared      uint32
	_           uint32
	stream      uintptr
	attrs       unsafe.Pointer
	numAttrs    uint32
	_           uint32
}

// launchAttr mirrors CUlaunchAttribute: an id and a 64-byte value union.
type launchAttr struct {
	id    int32
	_     int32
	value [64]byte
}

const attrClusterDimension = 4

// Launch enqueues the kernel; it returns once the launch is queued.
func (f Function) Launch(l Launch) error {
	var params unsafe.Pointer
	if len(l.Args) > 0 {
		params = unsafe.Pointer(&l.Args[0])
	}
	if l.Cluster == 0 {
		return check("cuLaunchKernel", lib.launchKernel(uintptr(f),
			l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2],
			l.Shared, uintptr(l.Stream), params, nil))
	}
	attr := launchAttr{id: attrClusterDimension}
	*(*[3]uint32)(unsafe.Pointer(&attr.value[0])) = [3]uint32{l.Cluster, 1, 1}
	cfg := launchConfig{grid: l.Grid, block: l.Block, shared: l.Shared, stream: uintptr(l.Stream),
		attrs: unsafe.Pointer(&attr), numAttrs: 1}
	return check("cuLaunchKernelEx", lib.launchKernelEx(unsafe.Pointer(&cfg), uintptr(f), params, nil))
}

// ExportTable returns the driver's private function table for uuid.
func ExportTable(uuid [16]byte) (uintptr, error) {
	var t uintptr
	if err := check("cuGetExportTable", lib.getExportTable(&t, &uuid)); err != nil {
		return 0, err
	}
	if t == 0 {
		return 0, errors.New("cuGetExportTable returned no table")
	}
	return t, nil
}

// ProcRoot is where the kernel driver's files are read from:
// $CARVE_PROC_ROOT (for tests of whole commands), else /proc.
var ProcRoot = cmp.Or(os.Getenv("CARVE_PROC_ROOT"), "/proc")

// ProcVersion reads the kernel driver's version (e.g. "580.159.04") from
// /proc/driver/nvidia/version; "" where it is not readable.
func ProcVersion() string {
	b, err := os.ReadFile(filepath.Join(ProcRoot, "driver/nvidia/version"))
	if err != nil {
		return ""
	}
	return parseProcVersion(string(b))
}

// SoleGPU returns the UUID of the machine's only NVIDIA GPU as the kernel
// driver lists it, when CUDA would see exactly that GPU as ordinal 0 (one GPU,
// CUDA_VISIBLE_DEVICES unset); "" otherwise. It lets carve find a cached
// topology without initializing CUDA, which takes a tenth of a second.
func SoleGPU() string {
	if _, set := os.LookupEnv("CUDA_VISIBLE_DEVICES"); set {
		return ""
	}
	infos, _ := filepath.Glob(filepath.Join(ProcRoot, "driver/nvidia/gpus/*/information"))
	if len(infos) != 1 {
		return ""
	}
	b, err := os.ReadFile(infos[0])
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "GPU UUID" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func parseProcVersion(text string) string {
	// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
	for _, w := range strings.Fields(text) {
		if strings.Count(w, ".") >= 1 && strings.Trim(w, "0123456789.") == "" && w[0] != '.' {
			return w
		}
	}
	return ""
}
