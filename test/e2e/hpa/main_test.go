package hpa

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	gpuscaleOnce sync.Once
	gpuscaleBin  string
	gpuscaleErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if gpuscaleBin != "" {
		_ = os.RemoveAll(filepath.Dir(gpuscaleBin))
	}
	os.Exit(code)
}
