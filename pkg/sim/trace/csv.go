// Package trace loads public workload traces into scenario workloads and
// node groups: the Alibaba GPU cluster trace of 2023 (openb_pod_list_*.csv
// and its node list), the Azure LLM inference trace (requests over time as
// the load curve of a GPU Deployment), and any jobs CSV whose columns are
// named by a mapping (submit time, duration or end, GPUs, cpu, memory).
//
// Every refusal names the file, the line and the column of the cell at
// fault ("jobs.csv:5:12: column gpus: ..."), never a field derived from it.
package trace

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
)

// table is a CSV file read by column name, each cell's position kept.
type table struct {
	name    string
	columns map[string]int
	header  []string
	rows    [][]string
	// pos[r][c] is where cell c of row r starts: line and column, from 1.
	pos [][][2]int
}

// readTable reads a CSV with a header row.
func readTable(name string, r io.Reader) (*table, error) {
	cr := csv.NewReader(inputlimit.Lines(name, r, inputlimit.TraceLineBytes))
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	t := &table{name: name, columns: map[string]int{}}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		t.columns[h] = i
		t.header = append(t.header, h)
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pos := make([][2]int, len(rec))
		for i := range rec {
			pos[i][0], pos[i][1] = cr.FieldPos(i)
		}
		t.rows = append(t.rows, rec)
		t.pos = append(t.pos, pos)
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
		return nil, fmt.Errorf("%s: no column %s (columns: %s)", t.name, strings.Join(missing, ", "),
			strings.Join(sortStrings(append([]string(nil), t.header...)), ", "))
	}
	return out, nil
}

// line is the line row starts on.
func (t *table) line(row int) int { return t.pos[row][0][0] }

// cellError is an error about one cell: file:line:column, the column's
// name, then what is wrong.
func (t *table) cellError(row, col int, format string, args ...any) error {
	p := t.pos[row][col]
	return fmt.Errorf("%s:%d:%d: column %s: %s", t.name, p[0], p[1], t.header[col], fmt.Sprintf(format, args...))
}

// float parses the cell of row at column col; an empty cell is 0. NaN and
// infinities are refused: no trace means them.
func (t *table) float(row, col int) (float64, error) {
	s := t.str(row, col)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.cellError(row, col, "not a number: %q", s)
	}
	return v, nil
}

// Limits on trace cells, far above any real trace, so that every number
// becomes a quantity or a time exactly: milli-cores, bytes and nanoseconds
// are int64, and a time.Duration holds about 292 years. Listed in
// docs/refusals.md.
const (
	// maxTraceGPUs bounds the GPUs of one row (a pod, a node, a job).
	maxTraceGPUs = 100_000
	// maxTraceMilliCPU bounds one row's cpu: a million cores.
	maxTraceMilliCPU = 1e12
	// maxTraceMemoryMiB bounds one row's memory: 1 PiB.
	maxTraceMemoryMiB = 1 << 30
	// maxTraceTokens bounds one request's tokens.
	maxTraceTokens = 1e12
	// maxTraceSeconds bounds a time (from 0, or from the first date-time)
	// and a duration: 100 years, so that a submit time plus a run time
	// still fits a time.Duration.
	maxTraceSeconds = 100 * 365.25 * 24 * 3600
)

// count parses a cell that counts things (GPUs, cores, bytes, tokens): a
// number that is not negative and at most limit; whole when whole is set.
func (t *table) count(row, col int, what string, whole bool, limit float64) (float64, error) {
	v, err := t.float(row, col)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, t.cellError(row, col, "%s must not be negative, got %s", what, t.str(row, col))
	}
	if v > limit {
		return 0, t.cellError(row, col, "%s must be at most %s, got %s", what, strconv.FormatFloat(limit, 'f', -1, 64), t.str(row, col))
	}
	if whole && v != math.Trunc(v) {
		return 0, t.cellError(row, col, "%s must be a whole number, got %s", what, t.str(row, col))
	}
	return v, nil
}

func (t *table) str(row, col int) string { return strings.TrimSpace(t.rows[row][col]) }
