// Package trace loads public workload traces into scenario workloads and
// node groups: the Alibaba GPU cluster trace of 2023 (openb_pod_list_*.csv
// and its node list), the Azure LLM inference trace (requests over time as
// the load curve of a GPU Deployment), and any jobs CSV whose columns are
// named by a mapping (submit time, duration or end, GPUs, cpu, memory).
package trace

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// table is a CSV file read by column name.
type table struct {
	name    string
	columns map[string]int
	rows    [][]string
}

// readTable reads a CSV with a header row.
func readTable(name string, r io.Reader) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	t := &table{name: name, columns: map[string]int{}}
	for i, h := range header {
		t.columns[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.rows = append(t.rows, rec)
	}
	return t, nil
}

// need returns the index of each named column, or an error naming the
// missing ones and the columns there are.
func (t *table) need(names ...string) ([]int, error) {
	out := make([]int, len(names))
	var missing []string
	for i, n := range names {
		idx, ok := t.columns[n]
		if !ok {
			missing = append(missing, n)
		}
		out[i] = idx
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(t.columns))
		for c := range t.columns {
			have = append(have, c)
		}
		return nil, fmt.Errorf("%s: no column %s (columns: %s)", t.name, strings.Join(missing, ", "), strings.Join(sortStrings(have), ", "))
	}
	return out, nil
}

// float parses the cell of row at column col; an empty cell is 0.
func (t *table) float(row int, col int, colName string) (float64, error) {
	s := strings.TrimSpace(t.rows[row][col])
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Row numbers count the header as line 1.
		return 0, fmt.Errorf("%s line %d column %s: not a number: %q", t.name, row+2, colName, s)
	}
	return v, nil
}

func (t *table) str(row, col int) string { return strings.TrimSpace(t.rows[row][col]) }
