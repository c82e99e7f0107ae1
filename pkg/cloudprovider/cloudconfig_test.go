package cloudprovider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type testConfig struct{ Value string }

func parseTestConfig(data []byte) (*testConfig, error) {
	s := strings.TrimSpace(string(data))
	if s == "bad" {
		return nil, errors.New("value: \"bad\" is not allowed")
	}
	return &testConfig{Value: s}, nil
}

func TestLoadCloudConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	for path, data := range map[string]string{good: "hello\n", bad: "bad\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	c, err := LoadCloudConfig("", parseTestConfig)
	if err != nil || c == nil || c.Value != "" {
		t.Errorf("empty path: got %+v, %v; want the zero configuration", c, err)
	}
	c, err = LoadCloudConfig(good, parseTestConfig)
	if err != nil || c.Value != "hello" {
		t.Errorf("good file: got %+v, %v; want Value hello", c, err)
	}
	_, err = LoadCloudConfig(bad, parseTestConfig)
	if err == nil || !strings.Contains(err.Error(), "--cloud-config "+bad) || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("bad file: error %v, want one naming --cloud-config, the path and the value", err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err = LoadCloudConfig(missing, parseTestConfig)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "--cloud-config") || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: error %v, want os.ErrNotExist naming --cloud-config and the path", err)
	}
}

func TestLoadCloudConfigRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("#", 4<<20+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCloudConfig(path, parseTestConfig)
	if err == nil || !strings.Contains(err.Error(), "--cloud-config") || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "over the 4 MiB limit") {
		t.Errorf("a 4 MiB + 1 file: %v; want it refused naming the flag, the file and the limit", err)
	}
}
