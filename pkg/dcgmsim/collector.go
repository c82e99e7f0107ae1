package dcgmsim

import (
	"crypto/sha1"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Labels dcgm-exporter puts on every series, in its order; a MIG
// instance's series carry GPU_I_PROFILE and GPU_I_ID after modelName, and
// podLabels follow on the series of a device a pod holds.
var (
	deviceLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"}
	migLabels    = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "Hostname", "DCGM_FI_DRIVER_VERSION"}
	podLabels    = []string{"container", "namespace", "pod"}
)

// DefaultDriverVersion is the DCGM_FI_DRIVER_VERSION label unless
// CollectorOptions say otherwise.
const DefaultDriverVersion = "580.95.05"

// reading is what a metric is computed from: one GPU at one instant.
type reading struct {
	model    Model
	held     bool
	util     float64 // percent
	energyMJ float64
}

// metric is one of dcgm-exporter's default counters (etc/default-counters.csv).
type metric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(r reading) float64
}

func zero(reading) float64 { return 0 }

// metrics are dcgm-exporter's defaults. The load model: utilization drives
// the SM clock (boost under any load), power (idle to board power, linear),
// temperature, memory-copy utilization (half the GPU utilization) and the
// framebuffer a holding pod uses (5% of it at rest, 80% at full load).
// Error, retry and license gauges stay 0 on a healthy simulated GPU.
var metrics = []metric{
	{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", prometheus.GaugeValue, func(r reading) float64 {
		if r.util > 0 {
			return r.model.MaxSMClockMHz
		}
		return r.model.IdleSMClockMHz
	}},
	{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", prometheus.GaugeValue, func(r reading) float64 { return r.model.MemClockMHz }},
	{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", prometheus.GaugeValue, func(r reading) float64 { return gpuTemp(r) + 3 }},
	{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", prometheus.GaugeValue, gpuTemp},
	{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", prometheus.GaugeValue, power},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", prometheus.CounterValue, func(r reading) float64 { return math.Round(r.energyMJ) }},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", prometheus.CounterValue, zero},
	{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", prometheus.GaugeValue, func(r reading) float64 { return math.Round(r.util) }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", prometheus.GaugeValue, func(r reading) float64 { return math.Round(r.util / 2) }},
	{"DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", prometheus.GaugeValue, zero},
	{"DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", prometheus.GaugeValue, zero},
	{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", prometheus.GaugeValue, zero},
	{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", prometheus.GaugeValue, func(r reading) float64 {
		return r.model.MemoryMiB - reservedMiB(r) - fbUsed(r)
	}},
	{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", prometheus.GaugeValue, fbUsed},
	{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "Total number of NVLink bandwidth counters for all lanes", prometheus.CounterValue, zero},
	{"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU License status", prometheus.GaugeValue, zero},
	{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors", prometheus.CounterValue, zero},
	{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors", prometheus.CounterValue, zero},
	{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed", prometheus.GaugeValue, zero},
}

func gpuTemp(r reading) float64 { return math.Round(30 + 45*r.util/100) }

func power(r reading) float64 {
	w := r.model.IdleWatts + (r.model.MaxWatts-r.model.IdleWatts)*r.util/100
	return math.Round(w*1000) / 1000
}

// reservedMiB is what the driver keeps for itself (2% of the framebuffer).
func reservedMiB(r reading) float64 { return math.Round(r.model.MemoryMiB * 0.02) }

func fbUsed(r reading) float64 {
	if !r.held {
		return 0
	}
	return math.Round(r.model.MemoryMiB * (0.05 + 0.75*r.util/100))
}

// CollectorOptions configure NewCollector.
type CollectorOptions struct {
	// Inventory returns the GPUs to report, sorted.
	Inventory func() []GPU
	// Loads gives each holding pod's utilization; GPUs with no pod are idle.
	Loads *LoadBook
	// Clock integrates power into DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
	// (default: the real clock).
	Clock clock.PassiveClock
	// DriverVersion is the DCGM_FI_DRIVER_VERSION label (default
	// DefaultDriverVersion).
	DriverVersion string
}

// Collector is a prometheus.Collector that reports dcgm-exporter's default
// metrics for every GPU of its inventory, computed at scrape time.
type Collector struct {
	opts CollectorOptions
	// descs[i][variant]: variant bit 0 is set with pod labels, bit 1 for a
	// MIG instance's labels.
	descs [][4]*prometheus.Desc

	mu     sync.Mutex
	energy map[string]energy // "node/index"
}

type energy struct {
	at    time.Time
	watts float64
	mj    float64
}

// NewCollector returns a Collector; opts.Inventory and opts.Loads are required.
func NewCollector(opts CollectorOptions) (*Collector, error) {
	if opts.Inventory == nil {
		return nil, fmt.Errorf("dcgmsim: CollectorOptions.Inventory is required")
	}
	if opts.Loads == nil {
		return nil, fmt.Errorf("dcgmsim: CollectorOptions.Loads is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.DriverVersion == "" {
		opts.DriverVersion = DefaultDriverVersion
	}
	c := &Collector{opts: opts, energy: map[string]energy{}}
	withPod := func(l []string) []string { return append(append([]string(nil), l...), podLabels...) }
	for _, m := range metrics {
		c.descs = append(c.descs, [4]*prometheus.Desc{
			prometheus.NewDesc(m.name, m.help, deviceLabels, nil),
			prometheus.NewDesc(m.name, m.help, withPod(deviceLabels), nil),
			prometheus.NewDesc(m.name, m.help, migLabels, nil),
			prometheus.NewDesc(m.name, m.help, withPod(migLabels), nil),
		})
	}
	return c, nil
}

// Describe sends nothing: the collector is unchecked because a series
// carries the pod labels only while a pod holds its GPU, as dcgm-exporter's do.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reports every metric of every GPU.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gpus := c.opts.Inventory()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Clock.Now()
	seen := make(map[string]bool, len(gpus))
	for _, g := range gpus {
		r := reading{model: g.Model, held: g.Holder != nil}
		if r.held {
			r.util = c.opts.Loads.Util(g.Holder.PodKey())
		}
		key := g.Node + "/" + strconv.Itoa(g.Index)
		labels := []string{strconv.Itoa(g.Index), gpuUUID(g.Node, g.Index), pciBusID(g.Index),
			"nvidia" + strconv.Itoa(g.Index), g.Model.Name}
		variant := 0
		if g.MIG != nil {
			// An instance has its share of the GPU's board power and its
			// own framebuffer.
			r.model.MemoryMiB = g.MIG.MemoryMiB
			r.model.IdleWatts *= g.MIG.Fraction
			r.model.MaxWatts *= g.MIG.Fraction
			key += "/" + strconv.Itoa(g.MIG.ID)
			labels = append(labels, g.MIG.Profile, strconv.Itoa(g.MIG.ID))
			variant = 2
		}
		labels = append(labels, g.Node, c.opts.DriverVersion)
		seen[key] = true
		r.energyMJ = c.integrate(key, now, power(r))
		if r.held {
			labels = append(labels, g.Holder.Container, g.Holder.Namespace, g.Holder.Pod)
			variant++
		}
		for i, m := range metrics {
			ch <- prometheus.MustNewConstMetric(c.descs[i][variant], m.kind, m.value(r), labels...)
		}
	}
	for key := range c.energy {
		if !seen[key] {
			delete(c.energy, key)
		}
	}
}

// integrate adds the energy drawn since the last scrape (trapezoid rule in
// watts times seconds, i.e. joules, times 1000 for mJ) and returns the total.
func (c *Collector) integrate(key string, now time.Time, watts float64) float64 {
	e, ok := c.energy[key]
	if ok {
		if dt := now.Sub(e.at).Seconds(); dt > 0 {
			e.mj += (e.watts + watts) / 2 * dt * 1000
		}
	}
	e.at, e.watts = now, watts
	c.energy[key] = e
	return e.mj
}

// gpuUUID is stable per node and index: "GPU-" and a UUID-shaped SHA-1 prefix.
func gpuUUID(node string, index int) string {
	h := sha1.Sum([]byte(node + "/" + strconv.Itoa(index)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// pciBusID numbers the devices on consecutive buses, as on common servers.
func pciBusID(index int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x10+index) }
