package trace

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// dateLayouts are the date-time forms trace cells may take besides
// numbers: RFC 3339 and the space-separated form many traces print
// ("2017-10-09 07:01:55", "2023-11-16 18:17:03.9799600"), with or without
// a zone (none means UTC), and a date alone.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999",
	"2006/01/02 15:04:05.999999999",
	"2006-01-02",
}

// parseDate reads s in one of dateLayouts.
func parseDate(s string) (time.Time, bool) {
	for _, l := range dateLayouts {
		if at, err := time.Parse(l, s); err == nil {
			return at, true
		}
	}
	return time.Time{}, false
}

// timeColumns read the time cells of a trace: numbers in unit (seconds,
// milliseconds, ...) or date-times, as seconds on one axis (for dates,
// from the first one read). Numbers and
// dates cannot be placed on one axis, so a trace must use one form
// throughout; the first cell of the other form is refused naming both.
type timeColumns struct {
	t    *table
	unit time.Duration
	// origin is the first date read: dates are seconds from it.
	origin time.Time
	// first is where the first time cell was read, and whether it was a date.
	first struct {
		set      bool
		date     bool
		row, col int
	}
}

func newTimeColumns(t *table, unit time.Duration) *timeColumns {
	return &timeColumns{t: t, unit: unit}
}

// seconds reads the cell; empty is true for an empty cell.
func (c *timeColumns) seconds(row, col int) (v float64, empty bool, err error) {
	s := c.t.str(row, col)
	if s == "" {
		return 0, true, nil
	}
	date := false
	if _, perr := strconv.ParseFloat(s, 64); perr == nil {
		if v, err = c.t.float(row, col); err != nil {
			return 0, false, err
		}
		if v < 0 {
			return 0, false, c.t.cellError(row, col, "a time must not be negative, got %s", s)
		}
		v *= c.unit.Seconds()
		if v > maxTraceSeconds {
			return 0, false, c.t.cellError(row, col, "a time must be at most 100 years (%s %s), got %s",
				strconv.FormatFloat(maxTraceSeconds/c.unit.Seconds(), 'f', -1, 64), unitName(c.unit), s)
		}
	} else if at, ok := parseDate(s); ok {
		date = true
		// Seconds from the first date read keep nanoseconds exact over
		// months, where seconds since 1970 in a float64 would not.
		if c.origin.IsZero() {
			c.origin = at
		}
		v = at.Sub(c.origin).Seconds()
		// Either side of the first, so that any two are at most 100 years
		// apart, as numbers are.
		if math.Abs(v) > maxTraceSeconds/2 {
			return 0, false, c.t.cellError(row, col, "%s is more than 50 years from the trace's first date-time, %s",
				s, c.origin.Format(time.RFC3339))
		}
	} else {
		return 0, false, c.t.cellError(row, col, "not a number (in %s) or a date-time such as 2017-10-09 07:01:55 or RFC 3339: %q", unitName(c.unit), s)
	}
	switch {
	case !c.first.set:
		c.first.set, c.first.date, c.first.row, c.first.col = true, date, row, col
	case c.first.date != date:
		form := map[bool]string{true: "a date-time", false: "a number"}
		p := c.t.pos[c.first.row][c.first.col]
		return 0, false, c.t.cellError(row, col, "%s, but line %d (column %s) holds %s: a trace uses one form of time throughout",
			form[date], p[0], c.t.header[c.first.col], form[c.first.date])
	}
	return v, false, nil
}

func unitName(d time.Duration) string {
	switch d {
	case time.Second:
		return "seconds"
	case time.Millisecond:
		return "milliseconds"
	case time.Microsecond:
		return "microseconds"
	case time.Minute:
		return "minutes"
	case time.Hour:
		return "hours"
	}
	return fmt.Sprintf("units of %s", d)
}
