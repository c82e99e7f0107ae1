package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// newExplainCommand is replaced by the real command as it lands.
func newExplainCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "explain",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("explain: not in this build yet")
		},
	}
}
