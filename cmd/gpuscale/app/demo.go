package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCommand is replaced by the real command as it lands.
func newDemoCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "demo",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("demo: not in this build yet")
		},
	}
}
