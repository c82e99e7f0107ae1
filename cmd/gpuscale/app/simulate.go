package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSimulateCommand is replaced by the real command as it lands.
func newSimulateCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "simulate",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("simulate: not in this build yet")
		},
	}
}
