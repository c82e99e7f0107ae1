package trace

import (
	"strings"
	"testing"
	"time"
)

const podHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

// Numbers too large for the quantity or the time they become are refused
// at their cell, never wrapped into negative capacities, times or
// GPU-hours.
func TestTraceOverflowsAreRefusedWithTheCell(t *testing.T) {
	jobCols := func(spec string) JobColumns {
		c, err := ParseJobColumns(spec)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name string
		read func() error
		want string
	}{
		{"alibaba deletion time past what a Duration holds", func() error {
			_, _, err := AlibabaPods("pods.csv", strings.NewReader(podHeader+"p0,1000,1024,1,1000,,LS,Running,0,9999999999,0\np1,1000,1024,1,1000,,LS,Running,10,20,10\n"), AlibabaOptions{})
			return err
		}, "pods.csv:2:35: column deletion_time: a time must be at most 100 years"},
		{"alibaba a billion GPUs in one pod", func() error {
			_, _, err := AlibabaPods("pods.csv", strings.NewReader(podHeader+"p0,1000,1024,1000000000,1000,,LS,Running,0,3600,0\n"), AlibabaOptions{})
			return err
		}, "pods.csv:2:14: column num_gpu: a GPU count must be at most 100000, got 1000000000"},
		{"alibaba memory past an int64 of bytes", func() error {
			_, _, err := AlibabaPods("pods.csv", strings.NewReader(podHeader+"p0,1000,1e15,1,1000,,LS,Running,0,3600,0\n"), AlibabaOptions{})
			return err
		}, "pods.csv:2:9: column memory_mib: a memory request must be at most 1073741824"},
		{"alibaba node cpu_milli 1e300", func() error {
			_, err := AlibabaNodeGroups("nodes.csv", strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\nn1,1e300,1,8,V100\n"), DefaultPrices())
			return err
		}, "nodes.csv:2:4: column cpu_milli: a cpu capacity must be at most 1000000000000, got 1e300"},
		{"alibaba submit time stretched by the time scale past 100 years", func() error {
			_, _, err := AlibabaPods("pods.csv", strings.NewReader(podHeader+"p0,1000,1024,1,1000,,LS,Running,0,3600,0\np1,1000,1024,1,1000,,LS,Running,3000000000,3000003600,3000000000\n"), AlibabaOptions{TimeScale: 1e-9})
			return err
		}, "pods.csv:3: column creation_time: 3e+09 s after the first pod, divided by the time scale 1e-09, is past 100 years"},
		{"jobs dates either side of the first, 99 years apart each", func() error {
			_, _, err := Jobs("jobs.csv", strings.NewReader("start,stop\n2000-01-01 00:00:00,2000-01-02 00:00:00\n1901-01-01 00:00:00,2099-01-01 00:00:00\n"), jobCols("submit=start,end=stop"))
			return err
		}, "jobs.csv:3:1: column start: 1901-01-01 00:00:00 is more than 50 years from the trace's first date-time, 2000-01-01T00:00:00Z"},
		{"jobs negative submit time", func() error {
			_, _, err := Jobs("jobs.csv", strings.NewReader("start,runtime,gpus\n10,5,1\n-5,10,1\n"), jobCols("submit=start,duration=runtime,gpus=gpus"))
			return err
		}, "jobs.csv:3:1: column start: a time must not be negative, got -5"},
		{"jobs duration of a million years", func() error {
			_, _, err := Jobs("jobs.csv", strings.NewReader("start,runtime,gpus\n0,3.2e13,1\n"), jobCols("submit=start,duration=runtime,gpus=gpus"))
			return err
		}, "jobs.csv:2:3: column runtime: a duration must be at most"},
		{"jobs memory past an int64 of bytes", func() error {
			_, _, err := Jobs("jobs.csv", strings.NewReader("start,runtime,mem\n0,5,1e300\n"), jobCols("submit=start,duration=runtime,memory=mem,memory-unit=GiB"))
			return err
		}, "jobs.csv:2:5: column mem: a memory request must be at most 1048576"},
		{"jobs dates three centuries apart", func() error {
			_, _, err := Jobs("jobs.csv", strings.NewReader("start,stop\n2020-01-01 00:00:00,2020-01-02 00:00:00\n2020-01-01 00:00:00,2350-01-01 00:00:00\n"), jobCols("submit=start,end=stop"))
			return err
		}, "jobs.csv:3:21: column stop: 2350-01-01 00:00:00 is more than 50 years from the trace's first date-time"},
		{"azure tokens 1e300", func() error {
			_, err := AzureLoad("azure.csv", strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n0,1e300,1\n"), AzureOptions{})
			return err
		}, "azure.csv:2:3: column ContextTokens: a token count must be at most 1000000000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A bucket far smaller than the trace would make a curve of billions of
// points: refused with the numbers, not allocated.
func TestAzureCurveIsBounded(t *testing.T) {
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1,1\n2023-11-16 19:00:00,1,1\n"
	_, err := AzureLoad("azure.csv", strings.NewReader(csv), AzureOptions{Bucket: time.Nanosecond})
	if err == nil || !strings.Contains(err.Error(), "azure.csv: a trace of 1h0m0s in buckets of 1ns would be a curve of 3600000000001 points, over the 604800 limit") {
		t.Errorf("AzureLoad with 1ns buckets: %v", err)
	}
	if _, err := AzureLoad("azure.csv", strings.NewReader(csv), AzureOptions{Bucket: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "3600001 points, over the 604800 limit") {
		t.Errorf("AzureLoad with 1ms buckets: %v", err)
	}
	if pts, err := AzureLoad("azure.csv", strings.NewReader(csv), AzureOptions{Bucket: time.Second}); err != nil || len(pts) != 3602 {
		t.Errorf("1s buckets over an hour: %d points, %v", len(pts), err)
	}
}
