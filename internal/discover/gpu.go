// Discovery on a real device: GPU runs carve's SM-recording kernel under a
// TPC mask on the thread that opened it, identifies the device, and
// DiscoverGPU runs topo's whole discovery with it.

package discover

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/carve-gpu/carve/internal/cuda"
	"github.com/carve-gpu/carve/internal/hook"
	"github.com/carve-gpu/carve/internal/kernels"
	"github.com/carve-gpu/carve/internal/topo"
)

// GPU probes a real device. Its methods must run on the OS thread that
// called OpenGPU (CUDA's current context is per thread).
type GPU struct {
	Dev     cuda.Device
	ctx     *cuda.Context
	fn      cuda.Function
	stream  cuda.Stream
	out     cuda.DevPtr
	outLen  int
	sms     int
	shared  int // dynamic shared memory per block: over half an SM's, so one block fills an SM
	hook    *hook.Hook
	Timeout time.Duration // per launch watchdog
	SpinNS  uint64        // how long each block stays resident
}

// OpenGPU locks the calling goroutine to its thread, makes device ordinal's
// primary context current there and installs carve's launch hook.
func OpenGPU(ordinal int) (*GPU, error) {
	dev, ctx, err := cuda.OpenPrimary(ordinal)
	if err != nil {
		return nil, fmt.Errorf("creating a context (outside MPS): %w", err)
	}
	sms, err := dev.Attr(cuda.AttrSMCount)
	if err != nil {
		return nil, err
	}
	h, err := hook.Install()
	if err != nil {
		return nil, err
	}
	g := &GPU{Dev: dev, ctx: ctx, sms: sms, hook: h, Timeout: 2 * time.Second, SpinNS: 20_000}
	mod, err := kernels.Load("topo")
	if err != nil {
		return nil, err
	}
	if g.fn, err = mod.Function("record_smid"); err != nil {
		return nil, err
	}
	perSM, err := dev.Attr(cuda.AttrSharedPerSM)
	if err != nil {
		return nil, err
	}
	optin, err := dev.Attr(cuda.AttrSharedOptin)
	if err != nil {
		return nil, err
	}
	g.shared = min(optin, perSM/2+4096)
	if err := g.fn.SetMaxDynamicShared(g.shared); err != nil {
		return nil, err
	}
	if g.stream, err = cuda.NewStream(); err != nil {
		return nil, err
	}
	g.outLen = 64 * sms
	if g.out, err = cuda.Alloc(4 * g.outLen); err != nil {
		return nil, err
	}
	return g, nil
}

// SMCount is the device's SM count.
func (g *GPU) SMCount() int { return g.sms }

// Run implements Prober.
func (g *GPU) Run(disable *topo.Disable, blocks, cluster int) ([]int, error) {
	if blocks > g.outLen {
		return nil, fmt.Errorf("%d blocks exceed the probe buffer (%d)", blocks, g.outLen)
	}
	const unwritten = 0xffffffff
	if err := g.out.Fill32(unwritten, blocks); err != nil {
		return nil, err
	}
	if err := g.ctx.Synchronize(); err != nil {
		return nil, err
	}
	if disable != nil {
		m := *disable
		g.hook.SetMask(&m)
	} else {
		g.hook.SetMask(nil)
	}
	out, spin := uint64(g.out), g.SpinNS
	err := g.fn.Launch(cuda.Launch{
		Grid: [3]uint32{uint32(blocks), 1, 1}, Block: [3]uint32{32, 1, 1},
		Cluster: uint32(cluster), Shared: uint32(g.shared), Stream: g.stream,
		Args: []unsafe.Pointer{unsafe.Pointer(&out), unsafe.Pointer(&spin)},
	})
	g.hook.SetMask(nil)
	if err != nil {
		return nil, err
	}
	if v := g.hook.Unsupported(); v != 0 {
		return nil, fmt.Errorf("launch descriptor version %#x is not supported: cannot apply TPC masks", v)
	}
	deadline := time.Now().Add(g.Timeout)
	for {
		done, err := g.stream.Done()
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kernel with disable mask %v did not finish within %v: "+
				"the GPU context is stuck (a mask enabling no live TPC?)", maskOrNone(disable), g.Timeout)
		}
		time.Sleep(50 * time.Microsecond)
	}
	raw := make([]uint32, blocks)
	if err := cuda.Download(raw, g.out); err != nil {
		return nil, err
	}
	sms := make([]int, blocks)
	for i, v := range raw {
		if v == unwritten {
			return nil, fmt.Errorf("block %d of %d never ran", i, blocks)
		}
		sms[i] = int(v)
	}
	return sms, nil
}

func maskOrNone(m *topo.Disable) string {
	if m == nil {
		return "none"
	}
	return m.String()
}

// Identify fills in the device fields of t.
func (g *GPU) Identify(t *topo.Topology) error {
	var err error
	if t.Device, err = g.Dev.Name(); err != nil {
		return err
	}
	if t.UUID, err = g.Dev.UUID(); err != nil {
		return err
	}
	if t.L2Bytes, err = g.Dev.Attr(cuda.AttrL2Size); err != nil {
		return err
	}
	if t.MemoryBytes, err = g.Dev.TotalMem(); err != nil {
		return err
	}
	maj, err := g.Dev.Attr(cuda.AttrCCMajor)
	if err != nil {
		return err
	}
	minor, err := g.Dev.Attr(cuda.AttrCCMinor)
	if err != nil {
		return err
	}
	t.Compute = fmt.Sprintf("%d.%d", maj, minor)
	t.SMCount = g.sms
	t.CUDAVersion, err = cuda.DriverVersion()
	t.Driver = cuda.ProcVersion()
	return err
}

// DiscoverGPU runs the whole discovery on device ordinal.
func DiscoverGPU(ordinal int, opt topo.Options) (*topo.Topology, error) {
	start := time.Now()
	g, err := OpenGPU(ordinal)
	if err != nil {
		return nil, err
	}
	t := &topo.Topology{}
	if err := g.Identify(t); err != nil {
		return nil, err
	}
	lay, err := topo.Discover(g, opt)
	if err != nil {
		return nil, err
	}
	t.Place(lay)
	t.DiscoveryMS = float64(time.Since(start).Microseconds()) / 1000
	t.DiscoveredAt = time.Now().UTC().Format(time.RFC3339)
	return t, t.Validate()
}
