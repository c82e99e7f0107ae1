// Command gpuscale autoscales Kubernetes clusters that run GPU workloads.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuscale/gpuscale/cmd/gpuscale/app"
)

func main() {
	// SIGTERM is how Kubernetes stops the pod: cancel the context so the
	// controller can release its lease and finish in-flight work.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.NewRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
