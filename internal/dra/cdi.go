// The CDI specs the driver writes: one a prepared claim, putting the shim,
// the claim's directory and carve's MPS into its containers, and where
// things are on the node and in the containers (Paths).

package dra

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/carve-gpu/carve/internal/ctl"
	"github.com/carve-gpu/carve/internal/mps"
	"github.com/carve-gpu/carve/internal/preload"
)

// The CDI devices the driver writes: one per prepared claim, named by the
// claim's UID (never reused, so a runtime's cache cannot hand out a stale
// one), in a spec file of its own.
const (
	CDIVendor = "carve.dev"
	CDIClass  = "claim"
	CDIKind   = CDIVendor + "/" + CDIClass
)

// Paths are where things are on the node and where the containers see them.
// The node's paths are the same in the plugin's container (its DaemonSet
// mounts them at the same place).
type Paths struct {
	RuntimeDir string     // carve's runtime directory (CARVE_RUNTIME_DIR)
	CDIDir     string     // where container runtimes read CDI specs
	Shim       string     // libcarve.so
	MPS        mps.Daemon // carve's MPS daemon
	// MPSShm is a directory the MPS daemon has as /dev/shm and its clients
	// must share; "" where MPS runs with the node's /dev/shm (hostIPC).
	MPSShm string
	// GPUDevice names the CDI device, of the NVIDIA Container Toolkit's
	// spec, that gives a container the GPU's device files and driver
	// libraries: {index} and {uuid} are replaced; "" for none.
	GPUDevice string
}

// Where the claim's things appear inside its containers.
const (
	ContainerDir  = "/run/carve/claim"
	ContainerShim = "/run/carve/lib/libcarve.so"
	ContainerPipe = "/run/carve/mps"
)

// CDIDeviceID is the CDI device of claim uid.
func CDIDeviceID(uid string) string { return CDIKind + "=" + uid }

// specName is the file name of claim uid's spec.
func specName(uid string) string {
	return cdi.GenerateTransientSpecName(CDIVendor, CDIClass, uid) + ".json"
}

// claimSpec is the CDI spec of a prepared claim on its GPUs, gpus: the
// shim preloaded from a read-only mount, the claim's directory (its
// reservation, the node blocks, root's, an LS claim's LS files and a BE
// claim's link to its BE file, its processes' blocks) mounted where
// CARVE_CTL_DIR says, for an LS or BE claim each GPU's directory of LS
// and BE files (beside its node block) mounted read-only over its
// place there, so that the pod writes no file of another tenant's, and,
// with MPS, carve's MPS pipe directory (and its
// /dev/shm) and the driver's limit of the claim's memory on each of its
// GPUs (s.Policy.Mem, in bytes). These are the spec's edits, which a
// container gets once whichever of the claim's requests it uses; its one
// device, the claim's, adds CARVE_CLAIM, the claim's UID.
func (p Paths) claimSpec(uid, claimDir string, s Settings, useMPS bool, gpus []GPU) *cdispec.Spec {
	bind := func(host, ctr string, opts ...string) *cdispec.Mount {
		return &cdispec.Mount{HostPath: host, ContainerPath: ctr, Type: "bind", Options: append([]string{"rbind"}, opts...)}
	}
	edits := cdispec.ContainerEdits{
		Env: []string{
			"LD_PRELOAD=" + ContainerShim,
			preload.VarCtlDir + "=" + ContainerDir,
			preload.VarCtlRoot + "=" + filepath.Join(ContainerDir, ctl.ClaimRoot),
		},
		Mounts: []*cdispec.Mount{
			bind(p.Shim, ContainerShim, "ro", "nosuid", "nodev"),
			bind(claimDir, ContainerDir, "rw", "nosuid", "nodev", "noexec"),
		},
	}
	if c := s.Policy.Class; c == ctl.ClassLS || c == ctl.ClassBE {
		for _, g := range gpus {
			d := ctl.NodeName(g.Topology.UUID) + ctl.NodeDirSuffix
			edits.Mounts = append(edits.Mounts, bind(filepath.Join(p.RuntimeDir, d), filepath.Join(ContainerDir, d), "ro", "nosuid", "nodev", "noexec"))
		}
	}
	if useMPS {
		edits.Env = append(edits.Env, mps.VarPipeDir+"="+ContainerPipe, mps.VarConnections+"="+strconv.Itoa(s.Connections))
		if s.Policy.Mem.Bytes > 0 {
			edits.Env = append(edits.Env, mps.PinnedMemLimits(p.ordinals(gpus), s.Policy.Mem.Bytes))
		}
		edits.Mounts = append(edits.Mounts, bind(p.MPS.PipeDir(), ContainerPipe, "rw", "nosuid", "nodev"))
		if p.MPSShm != "" {
			edits.Mounts = append(edits.Mounts, bind(p.MPSShm, "/dev/shm", "rw", "nosuid", "nodev"))
		}
	} else {
		// a pipe directory where no server listens: a context of its own
		edits.Env = append(edits.Env, mps.VarPipeDir+"="+filepath.Join(ContainerDir, "no-mps"))
	}
	return &cdispec.Spec{
		Version:        cdispec.CurrentVersion,
		Kind:           CDIKind,
		ContainerEdits: edits,
		Devices:        []cdispec.Device{{Name: uid, ContainerEdits: cdispec.ContainerEdits{Env: []string{VarClaim + "=" + uid}}}},
	}
}

// VarClaim names the claim a container runs in, by UID.
const VarClaim = "CARVE_CLAIM"

// ordinals are the device ordinals of gpus as the claim's containers see
// them: where the spec gives them each GPU's own CDI device, those GPUs
// alone, in the order of their indexes on the node (the driver's, by PCI
// bus); else their indexes on the node.
func (p Paths) ordinals(gpus []GPU) []int {
	out := make([]int, len(gpus))
	for i, g := range gpus {
		out[i] = g.Index
		if p.GPUDevice == "" {
			continue
		}
		out[i] = 0
		for _, o := range gpus {
			if o.Index < g.Index {
				out[i]++
			}
		}
	}
	return out
}

// gpuDeviceID is the NVIDIA CDI device of g, or "".
func (p Paths) gpuDeviceID(g GPU) string {
	if p.GPUDevice == "" {
		return ""
	}
	return strings.NewReplacer("{index}", strconv.Itoa(g.Index), "{uuid}", g.Topology.UUID).Replace(p.GPUDevice)
}

// specCache is the CDI library's view of the driver's spec directory.
func (p Paths) specCache() (*cdi.Cache, error) {
	c, err := cdi.NewCache(cdi.WithSpecDirs(p.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("CDI spec directory %s: %w", p.CDIDir, err)
	}
	return c, nil
}
