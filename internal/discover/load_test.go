package discover

import (
	"reflect"
	"testing"
)

func TestCleanEnv(t *testing.T) {
	got := cleanEnv([]string{"PATH=/bin", "LD_PRELOAD=/x.so", "CARVE_CTL_DIR=/d", "CARVE_CTL_ROOT=/r", "CUDA_MPS_PIPE_DIRECTORY=/p", "HOME=/h"})
	if !reflect.DeepEqual(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("cleanEnv = %v", got)
	}
}
