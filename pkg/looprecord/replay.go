package looprecord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// Difference is a loop whose replayed plan is not the recorded one.
type Difference struct {
	// Loop is the record's index.
	Loop int
	// Field says what differs: "actions", "nextDecisionAt", "status" or
	// "outcomes" (the actuator's at-once outcomes against those the
	// recorded run handed to the next loop).
	Field         string
	Recorded, Got string
}

func (d Difference) String() string {
	return fmt.Sprintf("loop %d: %s differ:\n  recorded %s\n  replayed %s", d.Loop, d.Field, d.Recorded, d.Got)
}

// Replay steps a fresh autoscaler built with opts over the recorded inputs
// (outcomes included) and compares each plan with the recorded one. Each
// replayed plan is also carried out through act, the same Actuator
// interface the shells implement; the scale-up results it gives at once
// must be those the recorded run handed to the next loop (their times
// aside: they are the shell's clock).
func Replay(opts autoscaler.Options, records []Record, act actuation.Actuator) ([]Difference, error) {
	a, err := autoscaler.New(opts)
	if err != nil {
		return nil, err
	}
	var diffs []Difference
	for i, rec := range records {
		in, err := rec.Input.ToInput()
		if err != nil {
			return diffs, fmt.Errorf("loop %d: %w", i, err)
		}
		plan, err := a.Step(in)
		if err != nil {
			return diffs, fmt.Errorf("loop %d: %w", i, err)
		}
		got, err := FromLoop(in, plan)
		if err != nil {
			return diffs, fmt.Errorf("loop %d: %w", i, err)
		}
		diffs = append(diffs, compare(i, "actions", rec.Plan.Actions, got.Plan.Actions)...)
		diffs = append(diffs, compare(i, "nextDecisionAt", rec.Plan.NextDecisionAt, got.Plan.NextDecisionAt)...)
		diffs = append(diffs, compare(i, "status", rec.Plan.Status, got.Plan.Status)...)
		if act == nil {
			continue
		}
		res := actuation.Carry(context.Background(), act, fixedClock{in.Now}, plan.Actions)
		if len(res.Errors) > 0 {
			return diffs, fmt.Errorf("loop %d: carrying out the replayed plan: %w", i, res.Errors[0])
		}
		if i+1 < len(records) {
			diffs = append(diffs, compare(i, "outcomes", scaleUpResults(records[i+1].Input.Outcomes), scaleUpResults(tagAll(res.Outcomes)))...)
		}
	}
	return diffs, nil
}

// scaleUpResults keeps what an actuator reports at once, without times.
func scaleUpResults(ts []Tagged) []string {
	var out []string
	for _, t := range ts {
		if t.Type != "ScaleUpResult" {
			continue
		}
		var r autoscaler.ScaleUpResult
		if json.Unmarshal(t.Value, &r) == nil {
			out = append(out, fmt.Sprintf("%s+%d %q", r.Group, r.Delta, r.Error))
		}
	}
	return out
}

func tagAll(os []autoscaler.Outcome) []Tagged {
	out := make([]Tagged, 0, len(os))
	for _, o := range os {
		if t, err := tag(o); err == nil {
			out = append(out, t)
		}
	}
	return out
}

func compare(loop int, field string, recorded, got any) []Difference {
	a, _ := json.Marshal(recorded)
	b, _ := json.Marshal(got)
	if bytes.Equal(a, b) {
		return nil
	}
	return []Difference{{Loop: loop, Field: field, Recorded: string(a), Got: string(b)}}
}

// fixedClock is a loop's decision time, for the replay's scale-up results.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                  { return c.t }
func (c fixedClock) Since(t time.Time) time.Duration { return c.t.Sub(t) }
