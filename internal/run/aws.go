package run

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gpuscale/gpuscale/cmd/gpuscale/app"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// newAWSProvider is replaced by the real provider as it lands.
func newAWSProvider(context.Context, app.ShellOptions, *slog.Logger) (cloudprovider.CloudProvider, error) {
	return nil, errors.New("--cloud-provider=aws: not in this build yet")
}
