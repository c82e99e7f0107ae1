package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// newMetricsAdapterCommand is replaced by the real command as it lands.
func newMetricsAdapterCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "metrics-adapter",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("metrics-adapter: not in this build yet")
		},
	}
}
