// Tests of fits, the memory check of root's judge and of a raise.

package ctl

import "testing"

// TestFitsUnknownGPUHidesNothing: a limit past the memory of a GPU the
// driver knows does not fit, whatever GPU no driver knows the block names
// before it; one within every known GPU's fits only where all are known.
func TestFitsUnknownGPUHidesNothing(t *testing.T) {
	const real, fake = "GPU-00000000-9cff-a913-b219-b274d00e237a", "GPU-11111111-9cff-a913-b219-b274d00e237a"
	mem := GPUMemory{
		Bytes: func(gpu string) uint64 {
			if gpu == real {
				return 80 << 30
			}
			return 0
		},
		Charge: func(limit uint64, _ bool) uint64 { return limit },
	}
	rec := func(gpus ...string) TenantRecord {
		r := TenantRecord{PID: 7}
		for _, g := range gpus {
			r.Parts = append(r.Parts, Part{GPU: g})
		}
		return r
	}
	for _, c := range []struct {
		name       string
		r          TenantRecord
		limit      uint64
		fit, known bool
	}{
		{"past the known GPU, an unknown one first", rec(fake, real), 1 << 40, false, true},
		{"past the known GPU", rec(real), 1 << 40, false, true},
		{"within the known GPU", rec(real), 8 << 30, true, true},
		{"within the known GPU, an unknown one first", rec(fake, real), 8 << 30, false, false},
		{"only an unknown GPU", rec(fake), 1 << 40, false, false},
	} {
		fit, known := fits(c.r, c.limit, nil, nil, mem)
		if fit != c.fit || known != c.known {
			t.Errorf("%s: fit %v, known %v; want %v, %v", c.name, fit, known, c.fit, c.known)
		}
	}
}
