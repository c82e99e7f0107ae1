package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

func TestRequestsAzureCSV(t *testing.T) {
	in := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:17:03.5,4808,10\n" +
		"2023-11-16 18:17:05.0,3180,8\n"
	got, err := Requests("code.csv", strings.NewReader(in), AzureLLMRequests())
	if err != nil {
		t.Fatal(err)
	}
	want := []serving.Request{{At: 0, InputTokens: 4808, OutputTokens: 10}, {At: 1.5, InputTokens: 3180, OutputTokens: 8}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Mooncake's timestamps are milliseconds; the run starts at the first request.
func TestRequestsMooncakeJSONL(t *testing.T) {
	in := `{"timestamp": 3000, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}` + "\n\n" +
		`{"timestamp": 3500, "input_length": 10, "output_length": 3}` + "\n"
	got, err := Requests("conv.jsonl", strings.NewReader(in), MooncakeRequests())
	if err != nil {
		t.Fatal(err)
	}
	want := []serving.Request{{At: 0, InputTokens: 6758, OutputTokens: 500}, {At: 0.5, InputTokens: 10, OutputTokens: 3}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Any timestamp,input,output trace reads through a mapping.
func TestRequestsMappedColumns(t *testing.T) {
	in := "t_us,prompt,completion\n1000000,5,6\n3000000,7,8\n"
	got, err := Requests("mine.csv", strings.NewReader(in), RequestColumns{Format: RequestsCSV, Time: "t_us", TimeUnit: time.Microsecond, Input: "prompt", Output: "completion"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != (serving.Request{At: 2, InputTokens: 7, OutputTokens: 8}) {
		t.Errorf("got %+v", got)
	}
}

func TestRequestsRefusals(t *testing.T) {
	moon, az := MooncakeRequests(), AzureLLMRequests()
	capped := moon
	capped.MaxRequests = 1
	for name, c := range map[string]struct {
		in   string
		cols RequestColumns
		want string
	}{
		"jsonl out of order": {`{"timestamp": 5, "input_length": 1, "output_length": 1}` + "\n" + `{"timestamp": 4, "input_length": 1, "output_length": 1}`, moon,
			"t:2: field timestamp: 4 is before the previous request's (line 1)"},
		"jsonl missing field": {`{"timestamp": 5, "input": 1, "output_length": 1}`, moon, "t:1: no field input_length (fields: input, output_length, timestamp)"},
		"jsonl fraction":      {`{"timestamp": 5, "input_length": 1.5, "output_length": 1}`, moon, "t:1: field input_length: a token count must be a whole number, got 1.5"},
		"jsonl negative":      {`{"timestamp": 5, "input_length": 1, "output_length": -2}`, moon, "t:1: field output_length: a token count must not be negative, got -2"},
		"jsonl string":        {`{"timestamp": "5", "input_length": 1, "output_length": 1}`, moon, `t:1: field timestamp: a time must be a number, got "5"`},
		"jsonl not an object": {`[1, 2]`, moon, "t:1: not a JSON object"},
		"jsonl too many":      {`{"timestamp": 5, "input_length": 1, "output_length": 1}` + "\n" + `{"timestamp": 6, "input_length": 1, "output_length": 1}`, capped, "t:2: more than 1 requests"},
		"csv out of order":    {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05,1,1\n2023-11-16 18:17:04,1,1\n", az, "t:3:1: column TIMESTAMP: 2023-11-16 18:17:04 is before the previous request's 2023-11-16 18:17:05 (line 2)"},
		"csv missing column":  {"TIMESTAMP,Context,GeneratedTokens\n1,1,1\n", az, "t: no column ContextTokens (columns: Context, GeneratedTokens, TIMESTAMP)"},
		"csv bad count":       {"TIMESTAMP,ContextTokens,GeneratedTokens\n1,x,1\n", az, "t:2:3: column ContextTokens: not a number"},
		"empty":               {"", moon, "t: no requests"},
		"unknown format":      {"", RequestColumns{Format: "xml", Time: "a", Input: "b", Output: "c"}, `request format: must be "csv" or "jsonl", got "xml"`},
		"unnamed column":      {"", RequestColumns{Format: RequestsCSV, Time: "a", Input: "b"}, `time, input and output must all be named, got "a", "b" and ""`},
	} {
		_, err := Requests("t", strings.NewReader(c.in), c.cols)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// One line of more than the limit is refused naming its line, before it fills memory.
func TestRequestsJSONLLineLimit(t *testing.T) {
	in := `{"timestamp": 1, "input_length": 1, "output_length": 1}` + "\n" + strings.Repeat(" ", 2<<20) + "\n"
	_, err := Requests("big.jsonl", strings.NewReader(in), MooncakeRequests())
	if err == nil || !strings.Contains(err.Error(), "big.jsonl: line 2: longer than the 1 MiB limit") {
		t.Errorf("got %v", err)
	}
}

// The published traces read whole: 8,819 Azure code requests over 57
// minutes, 12,031 Mooncake conversation requests over 59 (the data README).
func TestRequestsPublishedTraces(t *testing.T) {
	for _, c := range []struct {
		file    string
		cols    RequestColumns
		n       int
		minutes float64
	}{
		{"azure-llm-2023/AzureLLMInferenceTrace_code.csv", AzureLLMRequests(), 8819, 57},
		{"mooncake-fast25/conversation_trace.jsonl", MooncakeRequests(), 12031, 59},
	} {
		f := dataFile(t, c.file)
		reqs, err := Requests(f.Name(), f, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		if span := reqs[len(reqs)-1].At / 60; len(reqs) != c.n || span < c.minutes-1 || span > c.minutes+1 {
			t.Errorf("%s: %d requests over %.1f min, want %d over about %.0f", c.file, len(reqs), span, c.n, c.minutes)
		}
	}
}

func TestParseRequestColumns(t *testing.T) {
	c, err := ParseRequestColumns("jsonl", "time=ts, input=prompt_tokens,output=completion_tokens,time-unit=ms")
	if err != nil {
		t.Fatal(err)
	}
	if want := (RequestColumns{Format: RequestsJSONL, Time: "ts", TimeUnit: time.Millisecond, Input: "prompt_tokens", Output: "completion_tokens"}); c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if c, err := ParseRequestColumns("mooncake", "output=out"); err != nil || c.Output != "out" || c.Input != "input_length" || c.TimeUnit != time.Millisecond {
		t.Errorf("mooncake renamed: %+v, %v", c, err)
	}
	for _, bad := range []struct{ format, mapping, want string }{
		{"xml", "", `want azure-llm, mooncake, csv or jsonl, got "xml"`},
		{"csv", "time=t,input=i", "a csv trace needs time=, input= and output="},
		{"csv", "time=t,input=i,output=o,tokens=x", `unknown key "tokens"`},
		{"csv", "time=t,input=i,output=o,time-unit=fortnight", `time-unit: want s, ms, us, m or h, got "fortnight"`},
		{"csv", "time", `"time" is not key=column`},
	} {
		if _, err := ParseRequestColumns(bad.format, bad.mapping); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %q: %v, want %q", bad.format, bad.mapping, err, bad.want)
		}
	}
}

// FuzzRequests: the request readers never panic, and what they accept
// starts at 0, keeps time order, and holds whole token counts within the
// limits; the serving model takes it.
func FuzzRequests(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.5,4808,10\n2023-11-16 18:17:05.0,3180,8\n", "azure-llm", "")
	f.Add(`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}`+"\n", "mooncake", "")
	f.Add("t,i,o\n1e300,1,1\n", "csv", "time=t,input=i,output=o,time-unit=h")
	f.Add(`{"ts": 1, "in": 1e12, "out": 0}`+"\n"+`{"ts": 1, "in": 2, "out": 3}`, "jsonl", "time=ts,input=in,output=out,time-unit=us")
	f.Add("t,i,o\n5,1,1\n2023-01-01,1,1\n", "csv", "time=t,input=i,output=o")
	f.Fuzz(func(t *testing.T, in, format, mapping string) {
		cols, err := ParseRequestColumns(format, mapping)
		if err != nil {
			return
		}
		reqs, err := Requests("r", strings.NewReader(in), cols)
		if err != nil {
			return
		}
		if reqs[0].At != 0 {
			t.Fatalf("first request at %g from %q", reqs[0].At, in)
		}
		for i, q := range reqs {
			if q.At < 0 || (i > 0 && q.At < reqs[i-1].At) || q.InputTokens < 0 || q.OutputTokens < 0 ||
				q.InputTokens > maxTraceTokens || q.OutputTokens > maxTraceTokens {
				t.Fatalf("request %d %+v from %q", i, q, in)
			}
		}
		p, _ := serving.Lookup("H100", "8B")
		if _, err := serving.NewFleet(p, reqs); err != nil {
			t.Fatalf("the serving model refuses what the reader accepted: %v (from %q)", err, in)
		}
	})
}
