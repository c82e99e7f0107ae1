// Package simulate runs `gpuscale simulate`: its flags, the scenario built
// from them and the traces, the runs through pkg/sim/engine with the bounds
// on virtual time and memory, and the reports written. The command tree
// (cmd/gpuscale/app) only names the command and its help.
package simulate

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/report"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
	"github.com/gpuscale/gpuscale/pkg/sim/trace"
)

// Options are the flags of `gpuscale simulate`.
type Options struct {
	scenario, builtin            string
	list                         bool
	alibabaPods, alibabaNodes    string
	timeScale                    float64
	azure, azureWorkload         string
	azureMeasure                 string
	azureBucket                  time.Duration
	jobs, jobsColumns            string
	requests, requestsFormat     string
	requestsColumns              string
	requestsWorkload             string
	set                          string
	compare                      []string
	seed                         int64
	duration                     time.Duration
	csv, html                    string
	everyLoop, noProgress, quiet bool
	// limits bound a run (simulate_limits.go).
	limits simulateLimits
	// notes are what the trace loaders left out or changed.
	notes traceNotes
	// fs is the flag set AddFlags defined the flags on.
	fs *pflag.FlagSet
}

// NewOptions returns options that take the flags' defaults when AddFlags
// defines the flags.
func NewOptions() *Options { return &Options{} }

// AddFlags defines the flags on fs. Run reads from fs which flags were
// given (--seed and --duration override the scenario only then).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.scenario, "scenario", "", "Scenario YAML file (see docs/simulator.md).")
	fs.StringVar(&o.builtin, "builtin", "", "Built-in scenario to run (--list shows them).")
	fs.BoolVar(&o.list, "list", false, "List the built-in scenarios and exit.")
	fs.StringVar(&o.alibabaPods, "alibaba-pods", "", "Alibaba GPU trace pod list (openb_pod_list_*.csv): its pods run as Jobs.")
	fs.StringVar(&o.alibabaNodes, "alibaba-nodes", "", "Alibaba GPU trace node list (openb_node_list_*.csv): one node group per shape, the scenario's groups replaced.")
	fs.Float64Var(&o.timeScale, "time-scale", 1, "Divide the Alibaba trace's submission times by this (durations kept), so demand arrives denser.")
	fs.StringVar(&o.azure, "azure", "", "Azure LLM inference trace CSV: its request rate becomes the load curve of a Deployment (built-in azure-llm-serving unless --scenario or --builtin).")
	fs.StringVar(&o.azureWorkload, "azure-workload", "", "The Deployment the Azure trace drives (default the first with a load curve).")
	fs.StringVar(&o.azureMeasure, "azure-measure", string(trace.AzureRequests), "What the Azure trace's load counts: requests or tokens (per second).")
	fs.DurationVar(&o.azureBucket, "azure-bucket", time.Minute, "Step of the Azure load curve.")
	fs.StringVar(&o.jobs, "jobs", "", "Jobs CSV to add to the scenario's workloads, mapped by --jobs-columns.")
	fs.StringVar(&o.jobsColumns, "jobs-columns", "submit=submit,duration=duration,gpus=gpus,cpu=cpu,memory=memory",
		"Column mapping of --jobs: submit=,duration= (or end=),gpus=,cpu=,memory=, and time-unit=s|ms|us, cpu-unit=cores|milli, memory-unit=bytes|KiB|MiB|GiB; gpus-per-node=K splits a job of more GPUs into ceil(G/K) pods that start together.")
	fs.StringVar(&o.requests, "requests", "", "Request trace for a serving Deployment (docs/inference.md): its requests replace the scenario's.")
	fs.StringVar(&o.requestsFormat, "requests-format", "mooncake", "Form of --requests: azure-llm (TIMESTAMP,ContextTokens,GeneratedTokens CSV), mooncake (timestamp ms,input_length,output_length JSONL), csv or jsonl with --requests-columns.")
	fs.StringVar(&o.requestsColumns, "requests-columns", "", "Column mapping of --requests: time=,input=,output=, time-unit=s|ms|us (renames a preset's columns too).")
	fs.StringVar(&o.requestsWorkload, "requests-workload", "", "The serving Deployment --requests feeds (default the first).")
	fs.StringVar(&o.set, "set", "", "Autoscaler flags for every run, as cluster-autoscaler takes them (every decision flag): expander=price,scale-down-unneeded-time=5m.")
	fs.StringArrayVar(&o.compare, "compare", nil, "An option set to run (same form as --set); repeat to compare several side by side.")
	fs.Int64Var(&o.seed, "seed", 0, "Override the scenario's seed.")
	fs.DurationVar(&o.duration, "duration", 0, "Override how much virtual time to simulate (0: the scenario's).")
	fs.StringVar(&o.csv, "csv", "", "Write the time series to this CSV file (one file per run with --compare: NAME-1.csv, ...).")
	fs.StringVar(&o.html, "html", "", "Write an HTML report with charts to this file.")
	fs.BoolVar(&o.everyLoop, "every-loop", false, "Run the autoscaler at every scan interval even when nothing can have changed (slower, same result).")
	fs.BoolVar(&o.noProgress, "no-progress", false, "Never show the progress bar (it shows only on a terminal).")
	fs.BoolVar(&o.quiet, "quiet", false, "Do not print the summary table.")
	addLimitFlags(fs, &o.limits)
}

// Run runs `gpuscale simulate` until the runs end or ctx does (a signal
// stops a run with the report so far): the summary goes to out, notes,
// progress and the files written to errOut.
func Run(ctx context.Context, o *Options, out, errOut io.Writer) error {
	if o.list {
		return listBuiltins(out)
	}
	return runSimulate(ctx, o, out, errOut)
}

func listBuiltins(w io.Writer) error {
	for _, name := range scenario.Builtins() {
		s, err := scenario.Builtin(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-20s %s\n", name, s.Description)
	}
	return nil
}

func runSimulate(parent context.Context, f *Options, out, errOut io.Writer) error {
	if err := validateSimulateFlags(f); err != nil {
		return err
	}
	s, err := buildScenario(f)
	if err != nil {
		return err
	}
	f.notes.write(errOut)
	ctx, stop := simulationContext(parent)
	defer stop()
	applyMemoryLimit(f.limits)
	var stopped error
	base, err := autoscalerflags.ParseSettings(f.set)
	if err != nil {
		return fmt.Errorf("--set: %w", err)
	}
	sets := []string{f.set}
	if len(f.compare) > 0 {
		sets = f.compare
	}
	if os.Getenv("GOGC") == "" {
		// A batch run holds one cluster and churns through it: trading
		// memory for fewer collections makes it markedly faster.
		debug.SetGCPercent(400)
	}
	var runs []report.Run
	for i, spec := range sets {
		over, err := autoscalerflags.ParseSettings(spec)
		if err != nil {
			return fmt.Errorf("--compare %d: %w", i+1, err)
		}
		if len(f.compare) == 0 {
			over = nil // --set alone: already the base
		}
		sc, runBase, over, err := withPolicy(s, base, over)
		if err != nil {
			return fmt.Errorf("option set %q: %w", spec, err)
		}
		opts, err := engine.OptionsFor(sc, runBase, over)
		if err != nil {
			return fmt.Errorf("option set %q: %w", spec, err)
		}
		if _, err := autoscaler.New(opts.Autoscaler); err != nil {
			return fmt.Errorf("option set %q: %w", spec, err)
		}
		opts.EveryLoop = f.everyLoop
		if len(f.compare) > 0 {
			opts.Label = spec
		}
		finish := func() {}
		if !f.noProgress && isTerminal(os.Stderr) {
			opts.Progress, finish = progress(opts.Label, s.Name)
		}
		limitOptions(&opts, f.limits)
		res, err := engine.RunContext(ctx, opts)
		finish()
		if res == nil {
			return limitError(err, f.limits)
		}
		// The lower bounds can take minutes for hundreds of node groups:
		// a signal stops the wait for them too. A run stopped by a signal
		// still gets its report, which the next signal stops.
		reportCtx, reportStop := ctx, context.CancelFunc(func() {})
		if ctx.Err() != nil {
			reportCtx, reportStop = simulationContext(parent)
		}
		run, rerr := untilDone(reportCtx, func() (report.Run, error) { return report.NewRun(sc, res) })
		reportStop()
		if rerr != nil {
			return fmt.Errorf("run %d (%s): computing its lower bound: %w", i+1, cmp.Or(res.Label, s.Name), rerr)
		}
		runs = append(runs, run)
		if err != nil { // stopped early: report what was measured
			stopped = limitError(err, f.limits)
			break
		}
	}
	if !f.quiet {
		if err := report.WriteSummary(out, runs); err != nil {
			return err
		}
	}
	reportStopped(errOut, runs)
	if err := writeOutputs(errOut, f, runs); err != nil {
		return err
	}
	return stopped
}

// buildScenario reads the base scenario and folds in the traces.
func buildScenario(f *Options) (*scenario.Scenario, error) {
	var s *scenario.Scenario
	var err error
	switch {
	case f.scenario != "" && f.builtin != "":
		return nil, fmt.Errorf("--scenario and --builtin: give one, got both")
	case f.scenario != "":
		s, err = scenario.Load(f.scenario)
	case f.builtin != "":
		s, err = scenario.Builtin(f.builtin)
	case f.azure != "":
		s, err = scenario.Builtin("azure-llm-serving")
	case f.alibabaPods != "":
		s = &scenario.Scenario{Name: "alibaba-gpu-2023", Seed: 1}
	default:
		return nil, fmt.Errorf("nothing to simulate: give --scenario, --builtin, --alibaba-pods or --azure (--list shows the built-in scenarios)")
	}
	if err != nil {
		return nil, err
	}
	if err := addTraces(s, f); err != nil {
		return nil, err
	}
	if f.fs.Changed("seed") {
		s.Seed = f.seed
	}
	if f.fs.Changed("duration") {
		s.Duration.Duration = f.duration
	}
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func addTraces(s *scenario.Scenario, f *Options) error {
	open := func(path string, use func(name string, r io.Reader) error) error {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		return use(filepath.Base(path), file)
	}
	if f.alibabaNodes != "" {
		if err := open(f.alibabaNodes, func(name string, r io.Reader) (err error) {
			s.NodeGroups, err = trace.AlibabaNodeGroups(name, r, trace.DefaultPrices())
			return err
		}); err != nil {
			return fmt.Errorf("--alibaba-nodes: %w", err)
		}
	}
	if f.alibabaPods != "" {
		if err := open(f.alibabaPods, func(name string, r io.Reader) error {
			ws, st, err := trace.AlibabaPods(name, r, trace.AlibabaOptions{TimeScale: f.timeScale})
			s.Workloads = append(s.Workloads, ws...)
			if err == nil {
				err = f.notes.alibaba(name, st, f.limits)
			}
			return err
		}); err != nil {
			return fmt.Errorf("--alibaba-pods: %w", err)
		}
	}
	if f.jobs != "" {
		cols, err := trace.ParseJobColumns(f.jobsColumns)
		if err != nil {
			return fmt.Errorf("--jobs-columns: %w", err)
		}
		if err := open(f.jobs, func(name string, r io.Reader) error {
			ws, st, err := trace.Jobs(name, r, cols)
			s.Workloads = append(s.Workloads, ws...)
			if err == nil {
				err = f.notes.jobs(name, st, f.limits)
			}
			return err
		}); err != nil {
			return fmt.Errorf("--jobs: %w", err)
		}
	}
	if f.requests != "" {
		cols, err := trace.ParseRequestColumns(f.requestsFormat, f.requestsColumns)
		if err != nil {
			return fmt.Errorf("--requests-format, --requests-columns: %w", err)
		}
		if err := open(f.requests, func(name string, r io.Reader) error {
			reqs, err := trace.Requests(name, r, cols)
			if err != nil {
				return err
			}
			return setRequests(s, f.requestsWorkload, reqs)
		}); err != nil {
			return fmt.Errorf("--requests: %w", err)
		}
	}
	if f.azure != "" {
		return open(f.azure, func(name string, r io.Reader) error {
			points, err := trace.AzureLoad(name, r, trace.AzureOptions{Bucket: f.azureBucket, Measure: trace.AzureMeasure(f.azureMeasure),
				MaxSpan: f.limits.maxVirtualTime})
			if err != nil {
				return azureError(err, f.limits)
			}
			return setLoad(s, f.azureWorkload, points)
		})
	}
	return nil
}

// setRequests replaces the requests of the named serving Deployment (or
// the first) and makes the run last until 10 minutes after the last
// request (with its startAt) when it would end sooner.
func setRequests(s *scenario.Scenario, workload string, reqs []serving.Request) error {
	var names []string
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Deployment == nil || w.Deployment.Serving == nil {
			continue
		}
		names = append(names, w.Name)
		if workload == "" || w.Name == workload {
			w.Deployment.Serving.Requests = scenario.RequestsFrom(reqs)
			w.Deployment.Serving.Bursts = nil
			last := time.Duration(reqs[len(reqs)-1].At*float64(time.Second)) + w.Deployment.Serving.StartAt.Duration
			if s.Duration.Duration < last+10*time.Minute {
				s.Duration.Duration = last + 10*time.Minute
			}
			return nil
		}
	}
	return fmt.Errorf("--requests-workload: no serving Deployment named %q in scenario %s (serving ones: %s)",
		workload, s.Name, strings.Join(names, ", "))
}

// setLoad replaces the load curve of the named Deployment (or the first
// with a curve) and sets the duration to the curve's when none is given.
func setLoad(s *scenario.Scenario, workload string, points []scenario.LoadPoint) error {
	var names []string
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Deployment == nil || w.Deployment.Load == nil {
			continue
		}
		names = append(names, w.Name)
		if workload == "" || w.Name == workload {
			w.Deployment.Load.Points = points
			if s.Duration.Duration == 0 || s.Duration.Duration < points[len(points)-1].At.Duration {
				s.Duration.Duration = points[len(points)-1].At.Duration + 15*time.Minute
			}
			return nil
		}
	}
	return fmt.Errorf("--azure-workload: no Deployment with a load curve named %q in scenario %s (those with one: %s)",
		workload, s.Name, strings.Join(names, ", "))
}

func writeOutputs(log io.Writer, f *Options, runs []report.Run) error {
	if f.csv != "" {
		for i, r := range runs {
			path := f.csv
			if len(runs) > 1 {
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), i+1, ext)
			}
			if err := writeFile(path, func(w io.Writer) error { return report.WriteCSV(w, r.Result) }); err != nil {
				return fmt.Errorf("--csv: %w", err)
			}
			fmt.Fprintf(log, "wrote %s (%s)\n", path, r.Name())
		}
	}
	if f.html != "" {
		if err := writeFile(f.html, func(w io.Writer) error { return report.WriteHTML(w, runs) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(log, "wrote %s\n", f.html)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress draws a bar of virtual time on stderr.
func progress(label, name string) (func(now, end time.Duration), func()) {
	desc := name
	if label != "" {
		desc += " [" + label + "]"
	}
	var bar *progressbar.ProgressBar
	update := func(now, end time.Duration) {
		if bar == nil {
			bar = progressbar.NewOptions64(int64(end.Seconds()), progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(desc), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionClearOnFinish())
		}
		if m := int64(end.Seconds()); m != bar.GetMax64() {
			bar.ChangeMax64(m)
		}
		_ = bar.Set64(int64(now.Seconds()))
	}
	return update, func() {
		if bar != nil {
			_ = bar.Finish()
		}
	}
}

// policySetting is the option that picks one of a Deployment's HPA
// policies (scenario Deployment.policies) for a run.
const policySetting = "policy"

// withPolicy takes policy=NAME out of the run's settings (the option set
// wins over --set) and returns the scenario with that policy's HPA.
func withPolicy(s *scenario.Scenario, base, over []autoscalerflags.Setting) (*scenario.Scenario, []autoscalerflags.Setting, []autoscalerflags.Setting, error) {
	policy := ""
	take := func(in []autoscalerflags.Setting) []autoscalerflags.Setting {
		var out []autoscalerflags.Setting
		for _, st := range in {
			if st.Name == policySetting {
				policy = st.Value
				continue
			}
			out = append(out, st)
		}
		return out
	}
	base = take(base)
	over = take(over)
	if policy == "" {
		return s, base, over, nil
	}
	sc, err := s.WithPolicy(policy)
	return sc, base, over, err
}
