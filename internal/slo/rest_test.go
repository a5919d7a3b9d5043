// Tests of a GPU's pauses from the bottom (rest), step by step.

package slo

import "testing"

// TestRestBacksOff: a pause that comes back within Relapse steps of the
// last one's end is held past its last asking step for 1, 2, 4, ...
// steps, at most RestMax; one that comes later is held while asked only;
// room ends a held pause at once.
func TestRestBacksOff(t *testing.T) {
	c := New(t.TempDir())
	// run asks a pause for ask steps, then none, and returns the steps
	// after the last asked that the pause was held.
	run := func(ask int, room bool) int {
		for range ask {
			c.step++
			if c.rest("gpu", true, room) {
				t.Fatalf("step %d: held while asked", c.step)
			}
		}
		held := 0
		for {
			c.step++
			if !c.rest("gpu", false, room) {
				return held
			}
			held++
			if held > 2*RestMax {
				t.Fatalf("held %d steps", held)
			}
		}
	}
	free := func(n int) {
		for range n - 1 {
			c.step++
			if c.rest("gpu", false, false) {
				t.Fatalf("step %d: held while free", c.step)
			}
		}
	}
	if got := run(3, false); got != 0 {
		t.Fatalf("a first pause held %d steps past its asking, want 0", got)
	}
	want := 1
	for range 10 {
		free(Relapse)
		if got := run(2, false); got != want {
			t.Fatalf("a pause back after %d free steps held %d steps past its asking, want %d", Relapse, got, want)
		}
		want = min(2*want, RestMax)
	}
	free(Relapse)
	if got := run(2, true); got != 0 {
		t.Fatalf("with room, held %d steps, want 0", got)
	}
	free(Relapse + 2)
	if got := run(2, false); got != 0 {
		t.Fatalf("a pause %d steps after the last held %d steps, want 0", Relapse+2, got)
	}
	free(Relapse)
	if got := run(2, false); got != 1 {
		t.Fatalf("the next pause after one that came late held %d steps, want 1 (backing off from the start)", got)
	}
	free(Relapse) // the next holds 2 steps; room comes after 1
	for range 2 {
		c.step++
		c.rest("gpu", true, false)
	}
	c.step++
	if !c.rest("gpu", false, false) {
		t.Fatal("let go without room, a step into a hold of 2")
	}
	c.step++
	if c.rest("gpu", false, true) {
		t.Fatal("held with room")
	}
}
