// Command monthtrace writes a synthetic month of GPU serving instances in
// the form of the Alibaba GPU trace's pod list (openb_pod_list_*.csv), for
// the simulator's month-long benchmark (docs/benchmarks.md, "Ultra-scale"):
//
//	go run ./hack/monthtrace > month.csv
//	gpuscale simulate --alibaba-pods month.csv --alibaba-nodes openb_node_list_all_node.csv --set profile=gpu-cost
//
// 20,000 instances arrive uniformly over 31 days and live a log-normal
// time (median 2 days), cut at the month's end; six in ten ask for one GPU (a quarter
// of those a part of one), two in ten for 2, one each for 4 and 8. At the
// peak about 2,200 run, asking for about 4,800 GPUs (the trace's node list
// has 6,212). The same seed gives the same file.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
)

type instance struct {
	name             string
	cpuMilli, memMiB int
	gpus, gpuMilli   int
	created, deleted int64
}

func main() {
	n := flag.Int("instances", 20000, "instances to write")
	days := flag.Int("days", 31, "days over which they arrive")
	seed := flag.Uint64("seed", 7, "random seed")
	flag.Parse()
	if *n < 1 || *days < 1 {
		fmt.Fprintln(os.Stderr, "monthtrace: --instances and --days must be at least 1")
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(*seed, 0))
	const day = 86400
	gpuChoices := []int{1, 1, 1, 1, 1, 1, 2, 2, 4, 8}
	out := make([]instance, *n)
	for i := range out {
		created := int64(r.Float64() * float64(*days) * day)
		life := math.Min(math.Exp(r.NormFloat64()+math.Log(2*day)), 60*day)
		g := gpuChoices[r.IntN(len(gpuChoices))]
		milli := 1000
		if g == 1 {
			milli = []int{1000, 1000, 500, 250}[r.IntN(4)]
		}
		out[i] = instance{name: fmt.Sprintf("svc-%05d", i), cpuMilli: []int{4000, 8000, 16000}[r.IntN(3)] * max(1, g/2),
			memMiB: []int{16384, 32768, 65536}[r.IntN(3)], gpus: g, gpuMilli: milli, created: created, deleted: min(created+int64(life), int64(*days)*day)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].created < out[j].created })
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time")
	for _, in := range out {
		fmt.Fprintf(w, "%s,%d,%d,%d,%d,,LS,Running,%d,%d,%d\n", in.name, in.cpuMilli, in.memMiB, in.gpus, in.gpuMilli, in.created, in.deleted, in.created)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "monthtrace:", err)
		os.Exit(1)
	}
}
