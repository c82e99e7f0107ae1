package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcessOptions configure StartProcess.
type ProcessOptions struct {
	// Name names the process in errors and is its log file's base name.
	Name string
	// Path and Args are the command; Env is added to this process's environment.
	Path string
	Args []string
	Env  []string
	// LogDir receives Name.log, the process's stdout and stderr. Required.
	LogDir string
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL
	// (default 10 s).
	StopTimeout time.Duration
}

// Process is a child process started by StartProcess. It is killed if this
// process dies first (on Linux), so none outlives a killed test or demo.
type Process struct {
	// Name is ProcessOptions.Name; LogFile holds its output.
	Name    string
	LogFile string

	cmd         *exec.Cmd
	stopTimeout time.Duration
	done        chan struct{}
	waitErr     error
	stopOnce    sync.Once
}

// StartProcess starts a child process with its output in a log file.
func StartProcess(opts ProcessOptions) (*Process, error) {
	if opts.Name == "" || opts.Path == "" || opts.LogDir == "" {
		return nil, fmt.Errorf("localcluster: ProcessOptions needs Name, Path and LogDir, got %q, %q, %q", opts.Name, opts.Path, opts.LogDir)
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %s: %w", opts.Name, err)
	}
	logFile := filepath.Join(opts.LogDir, opts.Name+".log")
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %s: %w", opts.Name, err)
	}
	cmd := exec.Command(opts.Path, opts.Args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("localcluster: start %s (%s): %w", opts.Name, opts.Path, err)
	}
	p := &Process{Name: opts.Name, LogFile: logFile, cmd: cmd, stopTimeout: opts.StopTimeout, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitError is how the process ended, once Exited is closed.
func (p *Process) ExitError() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// Stop sends SIGTERM, waits up to the stop timeout, then kills. It returns
// nil when the process ended by the signal or had exited cleanly.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(p.stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	var exitErr *exec.ExitError
	if errors.As(p.waitErr, &exitErr) && !exitErr.Exited() {
		return nil // ended by our signal
	}
	return p.waitErr
}

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitHTTP polls url until it answers 200 OK, the process exits, or ctx
// ends. An https URL is polled without verifying the certificate: local
// servers (an aggregated API server) serve self-signed ones.
func (p *Process) WaitHTTP(ctx context.Context, url string) error {
	client := http.DefaultClient
	if strings.HasPrefix(url, "https://") {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		defer client.CloseIdleConnections()
	}
	var last error
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		last = getOK(ctx, client, url)
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s answered; log %s:\n%s", p.Name, p.waitErr, url, p.LogFile, p.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready: %v (log %s):\n%s", p.Name, url, last, p.LogFile, p.LogTail(20))
		case <-t.C:
		}
	}
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
// Another process may take it before it is used: callers that can retry
// should.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localcluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
