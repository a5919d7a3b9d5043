// Tests of corun.go: a worker says ready, then answers each line with a
// time.

package workload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type fakeWorkload struct {
	n   int
	err error
}

func (f *fakeWorkload) Iterate() (float64, error) { f.n++; return float64(f.n), f.err }

func TestServeCoRun(t *testing.T) {
	var out bytes.Buffer
	f := &fakeWorkload{}
	if err := ServeCoRun(f, strings.NewReader("go\ngo\n"), &out); err != nil {
		t.Fatal(err)
	}
	// one warm-up, then one run per line
	if out.String() != "ready\n2.000000\n3.000000\n" {
		t.Errorf("worker printed %q", out.String())
	}
	if err := ServeCoRun(&fakeWorkload{err: errors.New("boom")}, strings.NewReader("go\n"), &out); err == nil {
		t.Error("a failing kernel was not reported")
	}
}
