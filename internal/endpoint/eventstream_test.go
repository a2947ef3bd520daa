package endpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// heldHeader holds an eventStream's writer at its first step, the
// response's header, until release is closed: what the stream queues
// meanwhile is exactly what was sent, none of it taken by the writer yet.
type heldHeader struct {
	http.ResponseWriter
	release <-chan struct{}
}

func (h heldHeader) WriteHeader(code int) {
	<-h.release
	h.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the writer's ResponseController flush the real response.
func (h heldHeader) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// TestStreamBacklogBound: a notification is dropped only when the events
// waiting for the agent would pass maxStreamBacklog with it. One that fills
// the backlog to the byte is queued, and so is a first one larger than the
// whole backlog (nothing waits before it: the bound is on what the agent
// has not read, and dropping it would keep the stream from ever carrying
// it). What was queued reaches the agent, in order, once the writer runs.
// Real net/http on 127.0.0.1; the agent reads the stream.
func TestStreamBacklogBound(t *testing.T) {
	// event is an SSE event of exactly n bytes, named by mark.
	event := func(mark string, n int) []byte {
		head := "data: " + mark + " "
		return []byte(head + strings.Repeat("x", n-len(head)-2) + "\n\n")
	}
	a := event("a", 1<<10)
	b := event("b", maxStreamBacklog-len(a)) // a and b fill the backlog exactly
	c := event("c", 64)
	big := event("big", maxStreamBacklog+1)
	cases := []struct {
		name   string
		events [][]byte
		want   []error // enqueue's answer to each
		body   [][]byte
	}{
		{"filled to the byte", [][]byte{a, b, c}, []error{nil, nil, errStreamBehind}, [][]byte{a, b}},
		{"first past the bound", [][]byte{big, c}, []error{nil, errStreamBehind}, [][]byte{big}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			failed := make(chan error, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				release := make(chan struct{})
				s := &eventStream{w: heldHeader{w, release}}
				var bad error
				for i, ev := range tc.events {
					before := s.queued
					if err := s.enqueue(ev, true); !errors.Is(err, tc.want[i]) && bad == nil {
						bad = fmt.Errorf("event %d of %d bytes (%d queued before): %v, want %v", i, len(ev), before, err, tc.want[i])
					}
				}
				dropped := s.droppedCount()
				close(release)
				if !s.close() && bad == nil {
					bad = errors.New("the stream never started")
				}
				if want := len(tc.events) - len(tc.body); dropped != want && bad == nil {
					bad = fmt.Errorf("%d events dropped, want %d", dropped, want)
				}
				failed <- bad
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := <-failed; err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, ev := range tc.body {
				want = append(want, ev...)
			}
			if resp.Header.Get("Content-Type") != "text/event-stream" || string(got) != string(want) {
				t.Errorf("the agent read %q, %d bytes, starting %.20q; want %d bytes, the events not dropped", resp.Header.Get("Content-Type"),
					len(got), got, len(want))
			}
		})
	}
}

// TestStreamWritesAfterFirstFlush: the stream's writer keeps running after
// a batch of events went out, so an event queued once the agent has read
// the first still reaches it. Real net/http on 127.0.0.1; the handler
// queues the second event only after the agent read the first.
func TestStreamWritesAfterFirstFlush(t *testing.T) {
	read := make(chan struct{})
	failed := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := &eventStream{w: w}
		err := s.enqueue([]byte("data: first\n\n"), true)
		if err == nil {
			<-read
			err = s.enqueue([]byte("data: second\n\n"), true)
		}
		s.close()
		failed <- err
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "data: first\n" {
		t.Fatalf("first event: %q %v", first, err)
	}
	close(read)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-failed; err != nil {
		t.Fatalf("the second event, queued after the first was read: %v", err)
	}
	if string(rest) != "\ndata: second\n\n" {
		t.Errorf("after the first event the agent read %q, want the second", rest)
	}
}
