// ServeCoRun: a co-run worker's side, which runs its workload once for
// every line it reads and prints its time.

package workload

import (
	"bufio"
	"fmt"
	"io"
)

// ServeCoRun is the worker's side: say ready, then run w once for every
// line read from in and print its time, until in ends.
func ServeCoRun(w Workload, in io.Reader, out io.Writer) error {
	if _, err := w.Iterate(); err != nil { // warm-up
		return err
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		ms, err := w.Iterate()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%.6f\n", ms)
	}
	return sc.Err()
}
