package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDCGMSimCommand is replaced by the real command as it lands.
func newDCGMSimCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "dcgm-sim",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dcgm-sim: not in this build yet")
		},
	}
}
