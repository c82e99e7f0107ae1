package cloudprovider

import (
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
)

// LoadCloudConfig reads the --cloud-config file at path and decodes it with
// parse, which is expected to validate as well. An empty path gives the
// zero configuration. Errors name the flag, and the path when the contents
// are at fault.
func LoadCloudConfig[T any](path string, parse func([]byte) (*T, error)) (*T, error) {
	if path == "" {
		return new(T), nil
	}
	data, err := inputlimit.ReadFile(path, inputlimit.ConfigFileBytes)
	if err != nil {
		return nil, fmt.Errorf("--cloud-config: %w", err)
	}
	c, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("--cloud-config %s: %w", path, err)
	}
	return c, nil
}
