package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Result is what the walkthrough saw, for the summary and for tests.
type Result struct {
	// Kubeconfig is the cluster's admin kubeconfig (gone unless Keep).
	Kubeconfig string
	// Nodes is what happened to the GPU group's nodes.
	Nodes NodeRecord
	// HPAReplicas are the replica counts the HPA reported, in order,
	// repeats dropped (1, 2, 1 for the walkthrough).
	HPAReplicas []int32
	// Duration is the walkthrough's time, start-up included.
	Duration time.Duration
}

// Run starts the stack, plays the walkthrough and, unless opts.Keep, stops
// everything and deletes the cluster. With Keep it waits for ctx to end
// (Ctrl-C) with everything running before cleaning up. The Result is
// filled in as far as the walkthrough got, also on error.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("demo: the gpuscale binary: %w", err)
		}
		opts.Binary = exe
	}
	if opts.Story == "" {
		opts.Story = StoryGPU
	}
	if opts.Story == StoryInference && opts.MaxGPUNodes < inferenceNodes {
		opts.MaxGPUNodes = inferenceNodes
	}
	if opts.Workdir == "" {
		opts.Workdir = filepath.Join(os.TempDir(), "gpuscale-demo")
	}
	start := time.Now()
	p := newPrinter(opts.Out, time.Now)
	s := &stack{opts: opts, p: p}
	res := &Result{}
	stopWatch := make(chan struct{})
	// Deferred, so that everything stops also when a caller's AfterStep
	// ends its goroutine (a test's t.Fatal).
	defer func() {
		close(stopWatch)
		p.heading("Cleaning up: stopping the components and deleting cluster %s", clusterName(s))
		if serr := s.stop(); serr != nil {
			p.note("clean-up: %v", serr)
		}
	}()

	err := s.start(ctx)
	if s.cluster != nil {
		res.Kubeconfig = s.cluster.Kubeconfig
	}
	var w *watcher
	if err == nil {
		w = newWatcher(p, time.Now, appOf(opts.Story))
		err = w.start(s.cluster.Client, stopWatch)
	}
	if err == nil {
		if opts.Story == StoryInference {
			err = (&inferenceWalk{walk: walk{opts: opts, p: p, w: w, cluster: s.cluster}, loadURL: s.loadURL}).run(ctx)
		} else {
			err = (&walk{opts: opts, p: p, w: w, cluster: s.cluster}).run(ctx)
		}
	}
	if w != nil {
		res.Nodes, res.HPAReplicas = w.record()
	}
	res.Duration = time.Since(start)

	if err != nil && s.cluster != nil {
		p.heading("The walkthrough failed: the last lines of each component's log")
		p.block(s.logTails())
	}
	if err == nil && opts.Story == StoryInference {
		summarizeInference(p, res)
	} else if err == nil {
		summarize(p, res)
	}
	if opts.Keep && s.cluster != nil {
		p.heading("Everything keeps running until interrupted (Ctrl-C):")
		p.block("export KUBECONFIG=" + s.cluster.Kubeconfig + "\n" +
			"kubectl get hpa,pods,nodes   # kubectl: " + filepath.Join(s.cluster.BinDir, "kubectl") + "\n" +
			"logs: " + filepath.Join(s.cluster.Dir, "logs") + " and " + filepath.Join(s.dir, "logs"))
		<-ctx.Done()
	}
	return res, err
}

func clusterName(s *stack) string {
	if s.cluster == nil {
		return "(none)"
	}
	return s.cluster.Name
}

// summarize prints what happened, in one place.
func summarize(p *printer, r *Result) {
	p.heading("Done in %s", r.Duration.Round(time.Second))
	var added string
	if len(r.Nodes.Seen) > 1 {
		added = strings.Join(r.Nodes.Seen[1:], ", ")
	}
	lines := []string{
		fmt.Sprintf("HPA replicas:       %s", joinInts(r.HPAReplicas)),
		fmt.Sprintf("GPU nodes added:    %s for the first pod, %s for the second (most at once: %d)", first(r.Nodes.Seen), added, r.Nodes.Max),
		fmt.Sprintf("GPU nodes removed:  %s", strings.Join(r.Nodes.Removed, ", ")),
	}
	p.block(strings.Join(lines, "\n"))
}

func first(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return s[0]
}

func joinInts(v []int32) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " -> ")
}
