package aws

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// fakeSQS serves SQS's AWS JSON 1.0 protocol on a loopback server: POSTs
// of application/x-amz-json-1.0 with X-Amz-Target AmazonSQS.<Operation>,
// SigV4-signed for the service sqs, JSON answers and JSON error documents.
// It holds one queue; a received message stays until deleted (its
// visibility timeout is taken as longer than a test).
type fakeSQS struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	name     string
	messages []fakeMessage
	// inFlight are received messages by receipt handle.
	inFlight map[string]fakeMessage
	deleted  []string
	targets  []string
	receipts int
}

type fakeMessage struct{ ID, Body string }

func newFakeSQS(t *testing.T, name string, bodies ...string) *fakeSQS {
	f := &fakeSQS{t: t, name: name, inFlight: map[string]fakeMessage{}}
	for i, b := range bodies {
		f.messages = append(f.messages, fakeMessage{ID: fmt.Sprintf("msg-%d", i+1), Body: b})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSQS) url() string { return f.srv.URL + "/123456789012/" + f.name }

func (f *fakeSQS) client() *sqs.Client {
	cfg := sdkaws.Config{Region: testRegion, HTTPClient: f.srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, "")}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = sdkaws.String(f.srv.URL) })
}

func (f *fakeSQS) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake sqs: reading body: %v", err)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonSQS.")
	if r.Method != http.MethodPost || !ok || r.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		f.t.Errorf("fake sqs: want a JSON 1.0 POST with X-Amz-Target AmazonSQS.*, got %s %q %q", r.Method, target, r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := verifySigV4(r, body, "sqs"); err != nil {
		f.t.Errorf("fake sqs: %s: %v", op, err)
		f.writeError(w, http.StatusForbidden, "InvalidClientTokenId", err.Error())
		return
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		f.writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#InvalidParameterValue", "body is not JSON")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, op)
	var out any
	switch op {
	case "GetQueueUrl":
		if in["QueueName"] != f.name {
			f.writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.")
			return
		}
		out = map[string]string{"QueueUrl": f.url()}
	case "ReceiveMessage":
		if in["QueueUrl"] != f.url() {
			f.writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.")
			return
		}
		n := 1
		if v, ok := in["MaxNumberOfMessages"].(float64); ok {
			n = int(v)
		}
		var msgs []map[string]string
		for len(msgs) < n && len(f.messages) > 0 {
			m := f.messages[0]
			f.messages = f.messages[1:]
			f.receipts++
			handle := fmt.Sprintf("receipt-%d-%s", f.receipts, m.ID)
			f.inFlight[handle] = m
			sum := md5.Sum([]byte(m.Body))
			msgs = append(msgs, map[string]string{"MessageId": m.ID, "ReceiptHandle": handle, "MD5OfBody": hex.EncodeToString(sum[:]), "Body": m.Body})
		}
		out = map[string]any{"Messages": msgs}
	case "DeleteMessage":
		h, _ := in["ReceiptHandle"].(string)
		m, ok := f.inFlight[h]
		if !ok {
			f.writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#ReceiptHandleIsInvalid", "The input receipt handle is invalid.")
			return
		}
		delete(f.inFlight, h)
		f.deleted = append(f.deleted, m.ID)
		out = map[string]any{}
	default:
		f.writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#UnsupportedOperation", "the fake does not serve "+op)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

func (f *fakeSQS) writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (f *fakeSQS) state() (left int, inFlight int, deleted []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.messages), len(f.inFlight), append([]string(nil), f.deleted...)
}
