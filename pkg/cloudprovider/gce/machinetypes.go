package gce

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// MachineType is the shape of a Compute Engine machine type and its
// hourly list price.
type MachineType struct {
	Name      string
	VCPUs     int64
	MemoryMiB int64
	// GPUs bundled with the type (a2, a3, a4, g2), of GPUType; TPU chips
	// of TPU types (ct*), with GKE's TPU accelerator label as GPUType.
	GPUs    int64
	GPUType string
	// Price is the hourly price in USD; zero when unknown.
	Price Price
}

// Price is an hourly price in USD, on-demand and spot (the preemptible
// price is the spot price). Zero means unknown.
type Price struct {
	OnDemand float64 `json:"onDemand"`
	Spot     float64 `json:"spot"`
}

// For returns the spot or the on-demand price.
func (p Price) For(spot bool) float64 {
	if spot {
		return p.Spot
	}
	return p.OnDemand
}

//go:embed machinetypes.csv
var machineTypesCSV string

// acceleratorPrices are the hourly prices of GPUs attached to general
// purpose machines (n1), us-central1, from
// cloud.google.com/compute/gpus-pricing and the spot page, as carried by
// the upstream Cluster Autoscaler's GCE price model; compiled 2026-11-21.
// GPUs bundled with a2, a3 and g2 types cost nothing extra: the machine
// type's price includes them.
var acceleratorPrices = map[string]Price{
	"nvidia-tesla-k80":      {OnDemand: 0.45, Spot: 0.0375},
	"nvidia-tesla-p4":       {OnDemand: 0.60, Spot: 0.216},
	"nvidia-tesla-p100":     {OnDemand: 1.46, Spot: 0.43},
	"nvidia-tesla-t4":       {OnDemand: 0.35, Spot: 0.11},
	"nvidia-tesla-v100":     {OnDemand: 2.48, Spot: 0.74},
	"nvidia-tesla-a100":     {},
	"nvidia-a100-80gb":      {},
	"nvidia-l4":             {},
	"nvidia-h100-80gb":      {},
	"nvidia-h100-mega-80gb": {},
	"nvidia-h200-141gb":     {},
	"nvidia-b200":           {},
	// TPU chips come with their machine types only (billed per chip-hour;
	// the machine types' rows leave the price to the cloud config).
	"tpu-v4-podslice":      {},
	"tpu-v5-lite-podslice": {},
	"tpu-v5p-slice":        {},
	"tpu-v6e-slice":        {},
}

// builtinMachineTypes is machinetypes.csv, parsed once.
var builtinMachineTypes = mustParseMachineTypes(machineTypesCSV)

func mustParseMachineTypes(data string) map[string]MachineType {
	m, err := parseMachineTypes(strings.NewReader(data))
	if err != nil {
		panic(err) // the embedded table is checked by the tests
	}
	return m
}

// parseMachineTypes reads the table: a header, then one type per row.
func parseMachineTypes(r io.Reader) (map[string]MachineType, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 7
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("machine type table: %w", err)
	}
	out := make(map[string]MachineType, len(rows))
	for i, row := range rows {
		if i == 0 {
			continue
		}
		mt := MachineType{Name: row[0], GPUType: row[4]}
		ints := []*int64{&mt.VCPUs, &mt.MemoryMiB, &mt.GPUs}
		for j, dst := range ints {
			if *dst, err = strconv.ParseInt(row[1+j], 10, 64); err != nil {
				return nil, fmt.Errorf("machine type table: %s: column %d: %w", row[0], 2+j, err)
			}
		}
		prices := []*float64{&mt.Price.OnDemand, &mt.Price.Spot}
		for j, dst := range prices {
			if row[5+j] == "" {
				continue
			}
			if *dst, err = strconv.ParseFloat(row[5+j], 64); err != nil {
				return nil, fmt.Errorf("machine type table: %s: column %d: %w", row[0], 6+j, err)
			}
		}
		if _, dup := out[mt.Name]; dup {
			return nil, fmt.Errorf("machine type table: %s listed twice", mt.Name)
		}
		out[mt.Name] = mt
	}
	return out, nil
}

// customMachineType matches custom types: custom-CPUS-MEMMIB and
// FAMILY-custom-CPUS-MEMMIB, with an optional -ext suffix.
var customMachineType = regexp.MustCompile(`^(?:[a-z0-9]+-)?custom-([0-9]+)-([0-9]+)(?:-ext)?$`)

// lookupMachineType finds a type in the table or reads a custom type's
// shape from its name; ok is false for anything else.
func lookupMachineType(name string) (MachineType, bool) {
	if mt, ok := builtinMachineTypes[name]; ok {
		return mt, true
	}
	m := customMachineType.FindStringSubmatch(name)
	if m == nil {
		return MachineType{}, false
	}
	cpus, err1 := strconv.ParseInt(m[1], 10, 64)
	mem, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil || cpus <= 0 || mem <= 0 {
		return MachineType{}, false
	}
	return MachineType{Name: name, VCPUs: cpus, MemoryMiB: mem}, true
}
