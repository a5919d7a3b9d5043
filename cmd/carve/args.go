// The argument checks carve's commands share: each says what is missing or
// extra and how the command is used, where cobra says only how many
// arguments it wants.

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// needArgs is cobra.MinimumNArgs(1), saying what is missing and how the
// command is used where cobra says only how many arguments it wants.
func needArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%s needs %s: %s", cmd.CommandPath(), what, cmd.UseLine())
		}
		return nil
	}
}

// oneArg is cobra.ExactArgs(1), likewise.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s takes one %s, not %d: %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}
