//go:build linux

package localcluster

import "syscall"

// childAttrs kills a child when the thread that started it dies: a killed
// test or demo leaves no Prometheus or adapter behind.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
