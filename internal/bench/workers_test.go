package bench

import (
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
