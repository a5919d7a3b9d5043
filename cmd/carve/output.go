// The output helpers carve's commands share: the -o flag, JSON, progress
// bars and notes on stderr.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func addOutputFlag(c *cobra.Command, dst *string) {
	c.Flags().StringVarP(dst, "output", "o", "table", "output format: table or json")
}

func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return fmt.Errorf("unknown output format %q: want table or json", o)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progressBar returns a progress callback that draws a bar on stderr when
// stderr is a terminal, and prints a line every tenth of the work otherwise
// (logs stay readable).
func progressBar(what string) func(done, total int) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		start, last := time.Now(), -1
		return func(done, total int) {
			if tenth := 10 * done / max(1, total); tenth != last {
				last = tenth
				fmt.Fprintf(os.Stderr, "%s: %d/%d after %s\n", what, done, total, time.Since(start).Round(time.Second))
			}
		}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(what), progressbar.OptionClearOnFinish())
		}
		bar.Set(done)
	}
}

// note tells the user something worth knowing on stderr.
func note(cmd *cobra.Command, format string, args ...any) {
	fmt.Fprintf(cmd.ErrOrStderr(), "carve: note: "+format+"\n", args...)
}
