package run

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gpuscale/gpuscale/cmd/gpuscale/app"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// newGCEProvider is replaced by the real provider as it lands.
func newGCEProvider(context.Context, app.ShellOptions, *slog.Logger) (cloudprovider.CloudProvider, error) {
	return nil, errors.New("--cloud-provider=gce: not in this build yet")
}
