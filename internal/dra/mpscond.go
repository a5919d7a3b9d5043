// The MPS condition of a prepared claim's devices: whether it wanted
// carve's MPS and joined it.

package dra

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The MPS condition the driver keeps beside Ready in each of a prepared
// claim's devices' status: whether its containers join carve's MPS daemon.
// A claim that asks for MPS (the default) where the daemon is not running
// is prepared all the same, time-sliced, rather than refused: its pods
// run, and the condition says why they run without MPS and what to do.
const (
	ConditionMPS          = "MPS"
	ReasonMPSJoined       = "Joined"
	ReasonMPSNotRunning   = "NotRunning"
	ReasonMPSNotRequested = "NotRequested"
)

// mpsChoice is whether a prepared claim asked for MPS, and whether its
// containers join it.
type mpsChoice struct{ wanted, joined bool }

// condition is the MPS condition of a claim of generation gen, where
// carve's MPS daemon has its pipe directory pipe.
func (m mpsChoice) condition(pipe string, gen int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionMPS, ObservedGeneration: gen}
	switch {
	case m.joined:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonMPSJoined
		c.Message = fmt.Sprintf("its containers join carve's MPS daemon (pipe directory %s on the node)", pipe)
	case m.wanted:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMPSNotRunning
		c.Message = fmt.Sprintf("carve's MPS daemon was not running on the node when the claim was prepared (no control daemon in %s): "+
			"its containers run time-sliced with the GPU's other work, each in a context of its own, and its memory counts those contexts; "+
			"start carve daemon on the node, then recreate the claim (and its pods) to run under MPS", pipe)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMPSNotRequested
		c.Message = "its config asks for no MPS (mps: false): its containers run in contexts of their own, outside MPS's fault domain"
	}
	return c
}
