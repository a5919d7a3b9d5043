// Faults: the first error of a tenant's driver calls that ends its
// context's work, as the shim records it in the block, and the names of
// the errors it records.

package ctl

import (
	"fmt"
	"time"
)

// FaultNames are the driver errors the shim records as faults (see
// CARVE_FAULTS in shim/carve_ctl.h), by CUresult.
var FaultNames = map[uint32]string{
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	710: "CUDA_ERROR_ASSERT",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
	806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
	810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name is the fault's CUresult name.
func (f Fault) Name() string {
	if n, ok := FaultNames[f.Code]; ok {
		return n
	}
	return fmt.Sprintf("CUresult %d", f.Code)
}

// Fault is the first error a tenant's driver calls returned that ends its
// context's work (an illegal address, a failed launch, its MPS server
// gone): the CUresult, when, and the call that returned it.
type Fault struct {
	Code uint32
	At   time.Time
	Call string
}
