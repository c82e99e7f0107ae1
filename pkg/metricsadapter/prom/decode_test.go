package prom

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// referenceDecode decodes a reply the way client_golang's API client does:
// encoding/json into model.Vector (or model.Scalar).
func referenceDecode(body []byte) ([]Sample, error) {
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, err
	}
	if env.Status == "error" {
		return nil, errors.New(env.Error)
	}
	var data struct {
		Type   model.ValueType `json:"resultType"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return nil, err
	}
	switch data.Type {
	case model.ValVector:
		var vec model.Vector
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, len(vec))
		for i, s := range vec {
			if s.Histogram != nil {
				return nil, errors.New("histogram")
			}
			out[i] = Sample{Value: float64(s.Value), Timestamp: s.Timestamp}
			for k, v := range s.Metric {
				out[i].Labels = append(out[i].Labels, Label{Name: string(k), Value: string(v)})
			}
		}
		return out, nil
	case model.ValScalar:
		var s model.Scalar
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, err
		}
		return []Sample{{Value: float64(s.Value), Timestamp: s.Timestamp}}, nil
	}
	return nil, fmt.Errorf("result type %q", data.Type)
}

// sameSamples compares samples, labels as sets and NaN equal to NaN.
func sameSamples(a, b []Sample) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d samples, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Timestamp != b[i].Timestamp {
			return fmt.Errorf("sample %d: timestamp %v, want %v", i, a[i].Timestamp, b[i].Timestamp)
		}
		if !model.SampleValue(a[i].Value).Equal(model.SampleValue(b[i].Value)) {
			return fmt.Errorf("sample %d: value %v, want %v", i, a[i].Value, b[i].Value)
		}
		if len(a[i].Labels) != len(b[i].Labels) {
			return fmt.Errorf("sample %d: labels %v, want %v", i, a[i].Labels, b[i].Labels)
		}
		for _, l := range b[i].Labels {
			if v, ok := a[i].Label(l.Name); !ok || v != l.Value {
				return fmt.Errorf("sample %d: label %q = %q, want %q", i, l.Name, v, l.Value)
			}
		}
	}
	return nil
}

// replies Prometheus sends, or could: every one decodes as model.Vector does.
var goodReplies = []string{
	`{"status":"success","data":{"resultType":"vector","result":[]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"exported_pod":"gpu-hpa-test-7c6b78785c-4k8mb"},"value":[1778188051.123,"42"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"up","job":"a\"b","pod":"p\u00e9\n\\x","empty":""},"value":[1700000000,"NaN"]},` +
		`{"metric":{},"value":[1700000000.5,"+Inf"]},{"metric":{"a":"1"},"value":[-1.25,"-Inf"]},` +
		`{"metric":{"a":"2"},"value":[1700000000.12345,"1e-7"]},{"metric":{"a":"日本"},"value":[0.001,"-0"]}]},` +
		`"warnings":["w"],"infos":["i"]}`,
	" \n{ \"data\" : { \"result\" : [ { \"value\" : [ 1 , \"2\" ] , \"metric\" : { \"x\" : \"y\" } } ] , \"resultType\" : \"vector\" } , \"status\" : \"success\" , \"extra\" : {\"a\":[1,{\"b\":null}]} }\t",
	`{"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"42.5"]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"x"},"value":[1,"3"],"other":[true,false,null]}],"stats":{"samples":1}}}`,
	"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"bad\xffname\":\"v\xfe\"},\"value\":[1,\"3\"]}]}}",
}

func TestDecodeQueryMatchesModelVector(t *testing.T) {
	for _, body := range goodReplies {
		want, err := referenceDecode([]byte(body))
		if err != nil {
			t.Fatalf("reference refuses %s: %v", body, err)
		}
		got, err := decodeQuery([]byte(body))
		if err != nil {
			t.Errorf("decodeQuery(%s): %v", body, err)
			continue
		}
		if err := sameSamples(got, want); err != nil {
			t.Errorf("decodeQuery(%s): %v", body, err)
		}
	}
}

func TestDecodeQueryLargeReply(t *testing.T) {
	body := vectorReply(1000)
	want, err := referenceDecode(body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeQuery(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameSamples(got, want); err != nil {
		t.Error(err)
	}
	if v, _ := got[999].Label("exported_pod"); v != "gpu-bench-7c6b78785c-0999" {
		t.Errorf("last sample's pod = %q", v)
	}
}

func TestDecodeQueryRefuses(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, "matrix"},
		{`{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`, "string"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1"}]}]}}`, "histogram"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, "parse error"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1","a":"2"},"value":[1,"1"]}]}}`, "duplicate label"},
		{`{"status":"success","status":"success","data":{"resultType":"vector","result":[]}}`, "duplicate key"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`, "two elements"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[01,"1"]}]}}`, "number"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1",2]}]}}`, "two elements"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, "string"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}`, "no \"value\""},
		{`{"status":"success","data":{"resultType":"vector","result":[]}} x`, "end of the reply"},
		{`{"status":"success","data":{"resultType":"vector","result":[`, "end of reply"},
		{`{"Status":"success","data":{"resultType":"vector","result":[]}}`, "is not"},
		{`{"status":"success","data":{"resultType":"vector","result":[]},"warnings":[1,]}`, "invalid JSON"},
		{`{"status":"success"}`, "no \"data\""},
	} {
		_, err := decodeQuery([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeQuery(%s) error = %v, want one mentioning %q", tc.body, err, tc.want)
		}
	}
}

// FuzzDecodeQuery checks that whatever decodeQuery accepts, encoding/json
// into model.Vector accepts too and reads the same samples.
func FuzzDecodeQuery(f *testing.F) {
	for _, body := range goodReplies {
		f.Add([]byte(body))
	}
	f.Add(vectorReply(3))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeQuery(body)
		if err != nil {
			return
		}
		want, err := referenceDecode(body)
		if err != nil {
			t.Fatalf("decodeQuery accepted what the reference refuses (%v): %q", err, body)
		}
		if err := sameSamples(got, want); err != nil {
			t.Fatalf("%v: %q", err, body)
		}
	})
}

func vectorReply(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"exported_pod":"gpu-bench-7c6b78785c-%04d"},"value":[1778188051.%03d,"%v"]}`,
			i, i%1000, math.Round(float64(i%101)*10)/10)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkDecodeQuery compares decodeQuery with client_golang's decoding
// (encoding/json into model.Vector) on a 1,000-sample reply.
func BenchmarkDecodeQuery(b *testing.B) {
	body := vectorReply(1000)
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeQuery(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("model.Vector", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := referenceDecode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
