//go:build !linux

package localcluster

import "syscall"

// childAttrs sets nothing where the parent-death signal is missing.
func childAttrs() *syscall.SysProcAttr { return nil }
