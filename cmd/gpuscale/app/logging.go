package app

import (
	goflag "flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/gpuscale/gpuscale/internal/version"
)

// The values of --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logging is the one log configuration of every command: a slog handler
// on stderr, text or JSON, that slog.Default() and klog (client-go, the
// metrics API server) both write through.
type logging struct {
	format string
}

// addLogging gives the root command --log-format and sets the logs up
// before any subcommand runs; long-running commands then log the version
// and commit they run.
func addLogging(root *cobra.Command) {
	l := &logging{}
	root.PersistentFlags().StringVar(&l.format, "log-format", logFormatText,
		"How every command logs to stderr: text (key=value pairs) or json (one object a line).")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		v, err := verbosity(cmd)
		if err != nil {
			return err
		}
		logger, err := newLogger(cmd.ErrOrStderr(), l.format, handlerLevel(v, vmodule(cmd)))
		if err != nil {
			return err
		}
		installLogger(logger, v)
		if longRunning(cmd) {
			info := version.Get()
			logger.Info("gpuscale "+cmd.Name()+" starting", "version", info.Version, "commit", info.Commit, "go", info.GoVersion)
		}
		return nil
	}
}

// handlerLevel is the least level the handler writes for verbosity v (the
// command's --v, 0 when it has none): debug records from 1 on, and klog's
// V(n) records up to n = v, which the bridge from logr writes at slog level
// -n. With --vmodule klog alone decides which V(n) records to write.
func handlerLevel(v int, vmodule bool) slog.Level {
	switch {
	case vmodule:
		return slog.Level(math.MinInt32)
	case v > 0:
		return slog.Level(-max(4, v))
	default:
		return slog.LevelInfo
	}
}

// newLogger builds the handler, text or JSON, writing records of level and
// above.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case logFormatText:
		return slog.New(slog.NewTextHandler(w, o)), nil
	case logFormatJSON:
		return slog.New(slog.NewJSONHandler(w, o)), nil
	default:
		return nil, fmt.Errorf("--log-format: want %s or %s, got %q", logFormatText, logFormatJSON, format)
	}
}

// installLogger makes logger the process's: slog's default (and with it
// the standard log package's) and klog's, whose own verbosity gates the
// V(n) calls of client-go and the API server libraries.
func installLogger(logger *slog.Logger, v int) {
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger)
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(v)) // an int always parses
}

// verbosity is the value of the command's -v flag (the cluster
// autoscaler's --v, klog's -v of the metrics adapter), 0 without one.
func verbosity(cmd *cobra.Command) (int, error) {
	f := cmd.Flags().Lookup("v")
	if f == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(f.Value.String())
	if err != nil || v < 0 {
		return 0, fmt.Errorf("--v: want a number of 0 or more, got %q", f.Value.String())
	}
	return v, nil
}

// vmodule tells whether the command was given klog's --vmodule.
func vmodule(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("vmodule")
	return f != nil && f.Value.String() != ""
}

// longRunning tells the commands that serve until stopped, whose first log
// line says which build runs.
func longRunning(cmd *cobra.Command) bool {
	switch cmd.Name() {
	case "cluster-autoscaler", "metrics-adapter", "dcgm-sim", "inference-sim", "demo":
		return cmd.HasParent()
	}
	return false
}
