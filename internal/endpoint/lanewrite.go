package endpoint

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// laneRecorder is the ResponseWriter of a lane request: the handler chain
// never streams here (the SDK is not part of it), so the response is
// recorded and written in one piece.
type laneRecorder struct {
	header http.Header
	status int
	body   []byte
	// contentType backs the Content-Type of a complete response: the
	// recorder's own, so that setting it allocates nothing.
	contentType [1]string
}

func (r *laneRecorder) Header() http.Header { return r.header }

func (r *laneRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *laneRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, p...)
	return len(p), nil
}

// complete takes a whole fast-path response (offerResponse), which its
// writer no longer touches: kept, not copied.
func (r *laneRecorder) complete(body []byte) {
	r.contentType[0] = "application/json"
	r.header["Content-Type"] = r.contentType[:]
	r.WriteHeader(http.StatusOK)
	if len(r.body) == 0 {
		r.body = body
	} else {
		r.body = append(r.body, body...)
	}
}

// closeWriter makes the response the connection's last: it says
// "Connection: close" whenever the header may go out (limits.go's
// bodyDeadline takes its own "close" back once a body has been read).
type closeWriter struct{ http.ResponseWriter }

func (w *closeWriter) WriteHeader(code int) {
	w.Header().Set("Connection", "close")
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeWriter) Write(p []byte) (int, error) {
	w.Header().Set("Connection", "close")
	return w.ResponseWriter.Write(p)
}

func (w *closeWriter) FlushError() error {
	w.Header().Set("Connection", "close")
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *closeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// takeoverWriter is the ResponseWriter of a net/http request that the lane
// may take over: a complete fast-path response is kept for adopt instead of
// being written.
type takeoverWriter struct {
	http.ResponseWriter
	response []byte
}

func (w *takeoverWriter) complete(body []byte) { w.response = body }

func (w *takeoverWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// completer is a ResponseWriter that takes a whole JSON response at once.
type completer interface{ complete(body []byte) }

// offerResponse gives a complete JSON response (status 200) to the lane's
// writer under w, if there is one, and reports whether it took it.
func offerResponse(w http.ResponseWriter, body []byte) bool {
	for {
		if c, ok := w.(completer); ok {
			c.complete(body)
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// writeJSON writes a JSON body with its length.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// appendResponse appends an HTTP/1.1 response with a Content-Length, and
// "Connection: close" when it is the connection's last. Header values come
// from the gateway's own handlers; one with a line break would be dropped
// rather than split the response.
func appendResponse(b []byte, status int, h http.Header, body []byte, last bool) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	for k, vs := range h {
		if k == "Content-Length" || k == "Date" || k == "Connection" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			if bytes.ContainsAny([]byte(v), "\r\n") {
				continue
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	if last {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
