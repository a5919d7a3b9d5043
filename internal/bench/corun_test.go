package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCoRunner(t *testing.T) {
	w := Workers{}
	worker := func(ms string) []string {
		return []string{"sh", "-c", "echo ready; while read l; do echo " + ms + "; done"}
	}
	c, err := w.StartCoRun([]Setup{{}, {}}, [][]string{worker("1.5"), worker("2.25")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for range 3 {
		ms, err := c.Round()
		if err != nil || len(ms) != 2 || ms[0] != 1.5 || ms[1] != 2.25 {
			t.Fatalf("round: %v %v", ms, err)
		}
	}
	if _, err := w.StartCoRun([]Setup{{}}, [][]string{{"sh", "-c", "echo nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a worker that is not ready: %v", err)
	}
	bad, err := w.StartCoRun([]Setup{{}}, [][]string{{"sh", "-c", "echo ready; read l; echo fast"}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Stop()
	if _, err := bad.Round(); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Errorf("a worker that prints no time: %v", err)
	}
}

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
